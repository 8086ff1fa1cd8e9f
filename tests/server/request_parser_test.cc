// Decoding OpenAI bodies: defaults, every accepted shape, and errors that name the parameter.
#include <gtest/gtest.h>

#include "server/request_parser.h"

namespace tern::server {
namespace {

using nlohmann::json;

CompletionRequest parse_ok(api::Endpoint endpoint, const json& body) {
    auto parsed = parse_completion_request(endpoint, body);
    if (auto* error = std::get_if<RequestError>(&parsed)) ADD_FAILURE() << error->message;
    return std::holds_alternative<CompletionRequest>(parsed) ? std::get<CompletionRequest>(parsed) : CompletionRequest{};
}

RequestError parse_error(api::Endpoint endpoint, const json& body) {
    auto parsed = parse_completion_request(endpoint, body);
    EXPECT_TRUE(std::holds_alternative<RequestError>(parsed)) << body.dump();
    return std::holds_alternative<RequestError>(parsed) ? std::get<RequestError>(parsed) : RequestError{};
}

TEST(RequestParser, CompletionsDefaultsAndFields) {
    const auto request = parse_ok(api::Endpoint::kCompletions,
                                  {{"prompt", "hi"}, {"max_tokens", 5}, {"temperature", 0}, {"top_k", -1},
                                   {"stop", "\n"}, {"n", 2}, {"logprobs", 3}, {"seed", 7}, {"priority", -2},
                                   {"stream", true}, {"stream_options", {{"include_usage", true}}}, {"unknown", 1}});
    ASSERT_EQ(request.prompts.size(), 1u);
    EXPECT_EQ(request.prompts[0].text, "hi");
    EXPECT_EQ(request.max_tokens, 5);
    EXPECT_EQ(request.sampling.temperature, 0.0f);
    EXPECT_EQ(request.sampling.top_k, 0) << "-1 means off";
    EXPECT_EQ(request.stop, std::vector<std::string>{"\n"});
    EXPECT_EQ(request.n, 2);
    EXPECT_TRUE(request.logprobs);
    EXPECT_EQ(request.top_logprobs, 3);
    EXPECT_EQ(request.sampling.seed, 7u);
    EXPECT_EQ(request.priority, -2);
    EXPECT_TRUE(request.stream);
    EXPECT_TRUE(request.include_usage);
    const auto plain = parse_ok(api::Endpoint::kCompletions, {{"prompt", "x"}});
    EXPECT_FALSE(plain.max_tokens.has_value());
    EXPECT_EQ(plain.sampling.temperature, 1.0f);
    EXPECT_EQ(plain.n, 1);
    EXPECT_FALSE(plain.logprobs);
}

TEST(RequestParser, PromptShapes) {
    EXPECT_EQ(parse_ok(api::Endpoint::kCompletions, {{"prompt", {"a", "b"}}}).prompts.size(), 2u);
    const auto ids = parse_ok(api::Endpoint::kCompletions, {{"prompt", {1, 2, 3}}});
    ASSERT_EQ(ids.prompts.size(), 1u);
    EXPECT_TRUE(ids.prompts[0].is_tokens);
    EXPECT_EQ(ids.prompts[0].token_ids, (std::vector<int32_t>{1, 2, 3}));
    EXPECT_EQ(parse_ok(api::Endpoint::kCompletions, {{"prompt", {{1, 2}, {3}}}}).prompts.size(), 2u);
    EXPECT_EQ(parse_error(api::Endpoint::kCompletions, {{"prompt", json::array()}}).param, "prompt");
    EXPECT_EQ(parse_error(api::Endpoint::kCompletions, {{"prompt", {1, -2}}}).param, "prompt");
    EXPECT_EQ(parse_error(api::Endpoint::kCompletions, {{"prompt", 5}}).param, "prompt");
    EXPECT_EQ(parse_error(api::Endpoint::kCompletions, json::object()).param, "prompt");
}

TEST(RequestParser, ChatMessagesAndLogprobs) {
    const json parts = {{{"type", "text"}, {"text", "Hello "}}, {{"type", "image_url"}}, {{"type", "text"}, {"text", "you"}}};
    const auto request = parse_ok(api::Endpoint::kChatCompletions,
                                  {{"messages", {{{"role", "system"}, {"content", "Be brief."}},
                                                 {{"role", "user"}, {"content", parts}}}},
                                   {"max_completion_tokens", 9}, {"logprobs", true}, {"top_logprobs", 2}});
    ASSERT_EQ(request.messages.size(), 2u);
    EXPECT_EQ(request.messages[1].content, "Hello you");
    EXPECT_EQ(request.max_tokens, 9);
    EXPECT_TRUE(request.logprobs);
    EXPECT_EQ(request.top_logprobs, 2);
    EXPECT_EQ(parse_error(api::Endpoint::kChatCompletions, {{"messages", json::array()}}).param, "messages");
    EXPECT_EQ(parse_error(api::Endpoint::kChatCompletions, {{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}).param,
              "messages");
    EXPECT_EQ(parse_error(api::Endpoint::kChatCompletions,
                          {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"top_logprobs", 2}}).param,
              "top_logprobs");
}

TEST(RequestParser, RangeAndTypeErrorsNameTheParameter) {
    const std::vector<std::pair<json, std::string>> cases = {
        {{{"prompt", "x"}, {"max_tokens", -1}}, "max_tokens"},
        {{{"prompt", "x"}, {"max_tokens", 0}}, "max_tokens"},
        {{{"prompt", "x"}, {"max_tokens", "ten"}}, "max_tokens"},
        {{{"prompt", "x"}, {"temperature", 3}}, "temperature"},
        {{{"prompt", "x"}, {"temperature", "hot"}}, "temperature"},
        {{{"prompt", "x"}, {"top_p", 0}}, "top_p"},
        {{{"prompt", "x"}, {"n", 0}}, "n"},
        {{{"prompt", "x"}, {"n", 1000}}, "n"},
        {{{"prompt", "x"}, {"stop", {1, 2}}}, "stop"},
        {{{"prompt", "x"}, {"presence_penalty", 5}}, "presence_penalty"},
        {{{"prompt", "x"}, {"logprobs", 50}}, "logprobs"},
        {{{"prompt", "x"}, {"stream", "yes"}}, "stream"},
        {{{"prompt", "x"}, {"stream_options", 1}}, "stream_options"},
        {{{"prompt", "x"}, {"model", 5}}, "model"},
    };
    for (const auto& [body, param] : cases) {
        const RequestError error = parse_error(api::Endpoint::kCompletions, body);
        EXPECT_EQ(error.param, param) << body.dump() << ": " << error.message;
        EXPECT_FALSE(error.message.empty());
    }
    EXPECT_FALSE(parse_error(api::Endpoint::kCompletions, json::array()).message.empty());
}

}  // namespace
}  // namespace tern::server
