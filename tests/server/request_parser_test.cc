// Decoding OpenAI bodies: defaults, every accepted shape, and errors that name the parameter.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

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
                                   {"stream", true}, {"stream_options", {{"include_usage", true}}}});
    ASSERT_EQ(request.prompts.size(), 1u);
    EXPECT_EQ(request.prompts[0].text, "hi");
    EXPECT_EQ(request.max_tokens, 5);
    EXPECT_EQ(request.sampling.temperature, 0.0f);
    EXPECT_EQ(request.sampling.top_k, 0) << "-1 means off";
    EXPECT_EQ(request.stop, std::vector<std::string>{"\n"});
    EXPECT_EQ(request.n, 2);
    EXPECT_TRUE(request.logprobs);
    EXPECT_EQ(request.top_logprobs, 3);
    EXPECT_EQ(request.seed, 7);
    EXPECT_EQ(request.priority, -2);
    EXPECT_TRUE(request.stream);
    EXPECT_TRUE(request.include_usage);
    const auto plain = parse_ok(api::Endpoint::kCompletions, {{"prompt", "x"}});
    EXPECT_FALSE(plain.max_tokens.has_value());
    EXPECT_EQ(plain.sampling.temperature, 1.0f);
    EXPECT_EQ(plain.n, 1);
    EXPECT_FALSE(plain.logprobs);
    EXPECT_FALSE(plain.seed.has_value()) << "no seed given: choose_seed() draws one";
    EXPECT_EQ(parse_ok(api::Endpoint::kCompletions, {{"prompt", "x"}, {"seed", -1}}).seed, -1);
}

// Issue #17: unseeded requests get a fresh seed each, so identical ones differ; a given seed is kept bit for bit.
TEST(RequestParser, ChooseSeedKeepsAGivenSeedAndDrawsOtherwise) {
    EXPECT_EQ(choose_seed(7), 7u);
    EXPECT_EQ(choose_seed(-1), UINT64_MAX);
    std::set<uint64_t> drawn;
    for (int idx = 0; idx < 8; ++idx) drawn.insert(choose_seed(std::nullopt));
    EXPECT_EQ(drawn.size(), 8u) << "64-bit draws do not collide";
}

TEST(RequestParser, PriorityNeedsThePriorityPolicy) {
    const auto urgent = parse_ok(api::Endpoint::kCompletions, {{"prompt", "x"}, {"priority", -3}});
    const auto refused = check_priority(urgent, engine::SchedulingPolicy::kFcfs);
    ASSERT_TRUE(refused.has_value());
    EXPECT_EQ(refused->param, "priority");
    EXPECT_NE(refused->message.find("--scheduling-policy priority"), std::string::npos) << refused->message;
    EXPECT_FALSE(check_priority(urgent, engine::SchedulingPolicy::kPriority).has_value());
    const auto plain = parse_ok(api::Endpoint::kCompletions, {{"prompt", "x"}, {"priority", 0}});
    EXPECT_FALSE(check_priority(plain, engine::SchedulingPolicy::kFcfs).has_value());
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
    const json parts = {{{"type", "text"}, {"text", "Hello "}}, {{"type", "text"}, {"text", "you"}}};
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

// Issue #17: a field tern does not support is refused by name (OpenAI's behaviour), not silently dropped; a short
// list of harmless ones is accepted and ignored.
TEST(RequestParser, UnknownAndUnsupportedFieldsAreRefusedByName) {
    const json chat_messages = {{{"role", "user"}, {"content", "hi"}}};
    const std::vector<std::tuple<api::Endpoint, json, std::string>> cases = {
        {api::Endpoint::kCompletions, {{"prompt", "x"}, {"not_a_field", 1}}, "not_a_field"},
        // Completions-only fields are unknown to chat (logit_bias stood here until tern supported it).
        {api::Endpoint::kChatCompletions, {{"messages", chat_messages}, {"echo", true}}, "echo"},
        {api::Endpoint::kCompletions, {{"prompt", "x"}, {"messages", chat_messages}}, "messages"},
        {api::Endpoint::kChatCompletions, {{"messages", chat_messages}, {"prompt", "x"}}, "prompt"},
        {api::Endpoint::kChatCompletions, {{"messages", chat_messages}, {"functions", json::array()}}, "functions"},
        {api::Endpoint::kChatCompletions, {{"messages", chat_messages}, {"tool_choice", "required"}}, "tool_choice"},
        {api::Endpoint::kChatCompletions, {{"messages", chat_messages}, {"response_format", {{"type", "xml"}}}},
         "response_format"},
        {api::Endpoint::kChatCompletions, {{"messages", chat_messages}, {"parallel_tool_calls", "yes"}},
         "parallel_tool_calls"},
        {api::Endpoint::kCompletions, {{"prompt", "x"}, {"tools", json::array()}}, "tools"},
        {api::Endpoint::kChatCompletions, {{"messages", chat_messages}, {"user", 5}}, "user"},
    };
    for (const auto& [endpoint, body, param] : cases) {
        const RequestError error = parse_error(endpoint, body);
        EXPECT_EQ(error.param, param) << body.dump() << ": " << error.message;
        EXPECT_NE(error.message.find(param), std::string::npos) << error.message;
    }
    const json ignored = {{"messages", chat_messages}, {"user", "u"}, {"metadata", {{"k", "v"}}}, {"store", true},
                          {"service_tier", "auto"}, {"parallel_tool_calls", false}, {"safety_identifier", "s"},
                          {"prompt_cache_key", "k"}};
    EXPECT_EQ(parse_ok(api::Endpoint::kChatCompletions, ignored).messages.size(), 1u);
}

// These models take text only: an image or audio part is refused, not dropped (issue #17).
TEST(RequestParser, NonTextContentPartsAreRefused) {
    for (const char* type : {"image_url", "input_audio", "file"}) {
        const json parts = {{{"type", "text"}, {"text", "What is this?"}}, {{"type", type}}};
        const json body = {{"messages", {{{"role", "system"}, {"content", "Be brief."}},
                                         {{"role", "user"}, {"content", parts}}}}};
        const RequestError error = parse_error(api::Endpoint::kChatCompletions, body);
        EXPECT_EQ(error.param, "messages[1].content") << type;
        EXPECT_NE(error.message.find("text only"), std::string::npos) << error.message;
        EXPECT_NE(error.message.find(type), std::string::npos) << error.message;
    }
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
