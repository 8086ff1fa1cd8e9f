// The generation fields of issue #17's finding 12, decoded by tern serve's parser: logit_bias, min_tokens,
// stop_token_ids, echo, best_of, suffix and chat_template_kwargs; good values decoded, bad ones refused naming the
// parameter.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "server/request_parser.h"

namespace tern::server {
namespace {

using nlohmann::json;
using api::Endpoint;

const json kMessages = {{{"role", "user"}, {"content", "hi"}}};

CompletionRequest parse_ok(Endpoint endpoint, const json& body) {
    auto parsed = parse_completion_request(endpoint, body);
    if (auto* error = std::get_if<RequestError>(&parsed)) ADD_FAILURE() << body.dump() << ": " << error->message;
    return std::holds_alternative<CompletionRequest>(parsed) ? std::get<CompletionRequest>(parsed) : CompletionRequest{};
}

void expect_refused(Endpoint endpoint, const json& body, const std::string& param) {
    auto parsed = parse_completion_request(endpoint, body);
    ASSERT_TRUE(std::holds_alternative<RequestError>(parsed)) << body.dump();
    const RequestError& error = std::get<RequestError>(parsed);
    EXPECT_EQ(error.param, param) << body.dump() << ": " << error.message;
    EXPECT_NE(error.message.find(param), std::string::npos) << error.message;
}

TEST(RequestFields, LogitBiasObjectAndArrayForms) {
    const auto object_form = parse_ok(Endpoint::kCompletions,
                                      {{"prompt", "x"}, {"logit_bias", {{"5", -100}, {"17", 2.5}}}});
    ASSERT_EQ(object_form.sampling.logit_bias.size(), 2u);
    EXPECT_EQ(object_form.sampling.logit_bias[0], (std::pair<int32_t, float>{17, 2.5f}));  // nlohmann sorts keys
    EXPECT_EQ(object_form.sampling.logit_bias[1], (std::pair<int32_t, float>{5, -100.0f}));

    const auto array_form = parse_ok(Endpoint::kChatCompletions,
                                     {{"messages", kMessages}, {"logit_bias", {{3, 100}, {9, false}}}});
    ASSERT_EQ(array_form.sampling.logit_bias.size(), 2u);
    EXPECT_EQ(array_form.sampling.logit_bias[0], (std::pair<int32_t, float>{3, 100.0f}));
    EXPECT_EQ(array_form.sampling.logit_bias[1].first, 9);
    EXPECT_TRUE(std::isinf(array_form.sampling.logit_bias[1].second) && array_form.sampling.logit_bias[1].second < 0)
        << "false is llama-server's never";
    EXPECT_TRUE(parse_ok(Endpoint::kCompletions, {{"prompt", "x"}, {"logit_bias", json::object()}})
                    .sampling.logit_bias.empty());
    EXPECT_TRUE(parse_ok(Endpoint::kCompletions, {{"prompt", "x"}, {"logit_bias", nullptr}}).sampling.logit_bias.empty());
}

TEST(RequestFields, BadLogitBiasIsRefusedNamingIt) {
    for (const json& bad : {json{{"5", 101}}, json{{"5", -100.5}}, json{{"abc", 1}}, json{{"-1", 1}}, json{{"5", "1"}},
                            json{{"5", true}}, json{{"", 1}}, json{{"99999999999", 1}}, json::array({{1}}),
                            json::array({{1, 2, 3}}), json::array({{-1, 1}}), json::array({{"5", 1}}),
                            json::array({{1.5, 1}}), json(5), json("x")}) {
        expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"logit_bias", bad}}, "logit_bias");
    }
}

TEST(RequestFields, MinTokensAndStopTokenIds) {
    const auto request = parse_ok(Endpoint::kCompletions, {{"prompt", "x"}, {"max_tokens", 9}, {"min_tokens", 9},
                                                           {"stop_token_ids", {4, 0, 4}}});
    EXPECT_EQ(request.sampling.min_tokens, 9);
    EXPECT_EQ(request.stop_token_ids, (std::vector<int32_t>{4, 0, 4}));
    const auto chat = parse_ok(Endpoint::kChatCompletions, {{"messages", kMessages}, {"min_tokens", 3},
                                                            {"stop_token_ids", json::array()}});
    EXPECT_EQ(chat.sampling.min_tokens, 3);
    EXPECT_TRUE(chat.stop_token_ids.empty());
    EXPECT_EQ(parse_ok(Endpoint::kCompletions, {{"prompt", "x"}}).sampling.min_tokens, 0);

    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"max_tokens", 4}, {"min_tokens", 5}}, "min_tokens");
    expect_refused(Endpoint::kChatCompletions,
                   {{"messages", kMessages}, {"max_completion_tokens", 2}, {"min_tokens", 3}}, "min_tokens");
    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"min_tokens", -1}}, "min_tokens");
    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"min_tokens", 1.5}}, "min_tokens");
    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"stop_token_ids", {1, -2}}}, "stop_token_ids");
    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"stop_token_ids", 5}}, "stop_token_ids");
    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"stop_token_ids", {"5"}}}, "stop_token_ids");
    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"stop_token_ids", std::vector<int>(300, 1)}},
                   "stop_token_ids");
}

TEST(RequestFields, EchoBestOfAndSuffixAreCompletionsFields) {
    const auto request = parse_ok(Endpoint::kCompletions, {{"prompt", "x"}, {"echo", true}, {"best_of", 3}, {"n", 2},
                                                           {"suffix", "tail"}});
    EXPECT_TRUE(request.echo);
    EXPECT_EQ(request.best_of, 3);
    EXPECT_EQ(request.suffix, "tail");
    const auto plain = parse_ok(Endpoint::kCompletions, {{"prompt", "x"}});
    EXPECT_FALSE(plain.echo);
    EXPECT_EQ(plain.best_of, 0);
    EXPECT_FALSE(plain.suffix.has_value());

    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"echo", 1}}, "echo");
    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"best_of", 0}}, "best_of");
    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"best_of", 2}, {"n", 3}}, "best_of");
    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"best_of", 2}, {"stream", true}}, "best_of");
    EXPECT_TRUE(parse_ok(Endpoint::kCompletions, {{"prompt", "x"}, {"best_of", 1}, {"stream", true}}).stream);
    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"suffix", 5}}, "suffix");
    for (const char* field : {"echo", "best_of", "suffix"}) {
        expect_refused(Endpoint::kChatCompletions, {{"messages", kMessages}, {field, true}}, field);
    }
}

TEST(RequestFields, PromptLogprobsAndEchoWithLogprobs) {
    const auto echoed = parse_ok(Endpoint::kCompletions, {{"prompt", "x"}, {"echo", true}, {"logprobs", 1}});
    EXPECT_TRUE(echoed.echo && echoed.logprobs);
    EXPECT_FALSE(echoed.prompt_logprobs) << "echo's prompt logprobs go in the logprobs field";
    EXPECT_EQ(parse_ok(Endpoint::kCompletions, {{"prompt", "x"}, {"prompt_logprobs", 3}}).prompt_logprobs, 3);
    EXPECT_EQ(parse_ok(Endpoint::kChatCompletions, {{"messages", kMessages}, {"prompt_logprobs", 0}}).prompt_logprobs, 0);
    for (const json& bad : {json(-1), json(21), json(true), json(1.5)}) {
        expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"prompt_logprobs", bad}}, "prompt_logprobs");
    }
    expect_refused(Endpoint::kChatCompletions, {{"messages", kMessages}, {"prompt_logprobs", 1}, {"stream", true}},
                   "prompt_logprobs");
    EXPECT_TRUE(parse_ok(Endpoint::kCompletions, {{"prompt", "x"}, {"prompt_logprobs", 1}, {"stream", false}})
                    .prompt_logprobs);
}

TEST(RequestFields, ChatTemplateKwargs) {
    const json kwargs = {{"enable_thinking", false}, {"add_generation_prompt", false},
                         {"tags", {1, "two", {{"three", 3.5}}}}};
    const auto request = parse_ok(Endpoint::kChatCompletions, {{"messages", kMessages}, {"chat_template_kwargs", kwargs}});
    EXPECT_EQ(request.chat_template_kwargs, kwargs);
    EXPECT_EQ(parse_ok(Endpoint::kChatCompletions, {{"messages", kMessages}}).chat_template_kwargs, json::object());

    json deep = 1;
    for (int level = 0; level < 40; ++level) deep = json::array({deep});
    for (const json& bad : {json("x"), json::array({1}), json{{"messages", json::array()}},
                            json{{"add_generation_prompt", "yes"}}, json{{"deep", deep}}}) {
        expect_refused(Endpoint::kChatCompletions, {{"messages", kMessages}, {"chat_template_kwargs", bad}},
                       "chat_template_kwargs");
    }
    expect_refused(Endpoint::kCompletions, {{"prompt", "x"}, {"chat_template_kwargs", json::object()}},
                   "chat_template_kwargs");
}

}  // namespace
}  // namespace tern::server
