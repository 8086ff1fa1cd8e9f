// The two decoders of OpenAI request bodies, api::parse_generation_request (the bench, the router) and
// server::parse_completion_request (tern serve), fed the same bodies: they accept and reject alike, with the same
// message, since both check a body against the one set of rules in api/request_fields.h (issue #17).
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "api/openai_types.h"
#include "server/request_parser.h"

namespace tern {
namespace {

using api::Endpoint;
using nlohmann::json;

struct Case {
    Endpoint endpoint;
    const char* body;
    bool valid;
};

const Case kCases[] = {
    {Endpoint::kCompletions, R"({"prompt": "hi"})", true},
    {Endpoint::kCompletions, R"({"prompt": ["a", "b"]})", true},  // batched prompts
    {Endpoint::kCompletions, R"({"prompt": [[1, 2], [3]]})", true},
    {Endpoint::kCompletions, R"({"prompt": [1, 2, 3]})", true},
    {Endpoint::kCompletions, R"({"prompt": ["a", [1]]})", true},
    {Endpoint::kCompletions, R"({"prompt": []})", false},
    {Endpoint::kCompletions, R"({"prompt": [1, -2]})", false},
    {Endpoint::kCompletions, R"({"prompt": [1, 4294967296]})", false},
    {Endpoint::kCompletions, R"({"prompt": null})", false},
    {Endpoint::kCompletions, R"({})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "seed": -1})", true},  // OpenAI and vLLM take any int64
    {Endpoint::kCompletions, R"({"prompt": "hi", "seed": 9223372036854775807})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "seed": 18446744073709551615})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "seed": 1.5})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "seed": null})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "max_tokens": 0})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "max_tokens": 1})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "max_tokens": null})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "max_tokens": 4294967296})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "temperature": 3})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "temperature": 0.5})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "temperature": null})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "top_p": 0})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "top_k": -1})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "top_k": -5})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "model": null})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "model": 5})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "stream": null})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "stream": "yes"})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "stream": true, "stream_options": {"include_usage": true}})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "stream_options": 1})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "ignore_eos": 1})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "n": 2, "stop": ["x"], "logprobs": 2})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "n": 0})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "logprobs": true})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "presence_penalty": 3})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "not_a_field": 1})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "user": "u"})", true},
    {Endpoint::kChatCompletions, R"({"messages": [{"role": "user", "content": "hi"}]})", true},
    {Endpoint::kChatCompletions, R"({"messages": [{"role": "user"}]})", true},
    {Endpoint::kChatCompletions, R"({"messages": [{"role": "wizard", "content": "hi"}]})", false},
    {Endpoint::kChatCompletions, R"({"messages": [{"content": "hi"}]})", false},
    {Endpoint::kChatCompletions, R"({"messages": []})", false},
    {Endpoint::kChatCompletions,
     R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]})",
     true},
    {Endpoint::kChatCompletions,
     R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}]}]})", false},
    {Endpoint::kChatCompletions, R"({"messages": [{"role": "user", "content": 5}]})", false},
    {Endpoint::kChatCompletions,
     R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, "max_completion_tokens": 7})", true},
    {Endpoint::kChatCompletions,
     R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": true, "top_logprobs": 2})", true},
    {Endpoint::kChatCompletions, R"({"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2})", false},
    {Endpoint::kChatCompletions, R"({"messages": [{"role": "user", "content": "hi"}], "tools": []})", true},
    {Endpoint::kChatCompletions, R"({"messages": [{"role": "user", "content": "hi"}], "tools": {}})", false},
    {Endpoint::kChatCompletions,
     R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}],
         "tool_choice": "required", "parallel_tool_calls": false})", true},
    {Endpoint::kChatCompletions,
     R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}],
         "tool_choice": {"type": "function", "function": {"name": "g"}}})", false},
    {Endpoint::kChatCompletions,
     R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": null,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
         {"role": "tool", "tool_call_id": "c1", "content": "2"}]})", true},
    {Endpoint::kChatCompletions,
     R"({"messages": [{"role": "user", "content": "hi"}, {"role": "tool", "content": "2"}]})", false},
    // Issue #17, finding 12.
    {Endpoint::kCompletions, R"({"prompt": "hi", "logit_bias": {"5": -100, "7": 3}})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "logit_bias": [[5, false], [7, 1.5]]})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "logit_bias": {"5": 200}})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "logit_bias": {"x": 1}})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "max_tokens": 4, "min_tokens": 4, "stop_token_ids": [2]})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "max_tokens": 4, "min_tokens": 5})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "stop_token_ids": [-2]})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "echo": true, "best_of": 3, "n": 2, "suffix": "end"})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "echo": true, "logprobs": 0})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "prompt_logprobs": 2})", true},
    {Endpoint::kCompletions, R"({"prompt": "hi", "prompt_logprobs": 21})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "prompt_logprobs": 0, "stream": true})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "best_of": 3, "stream": true})", false},
    {Endpoint::kCompletions, R"({"prompt": "hi", "best_of": 1, "n": 2})", false},
    {Endpoint::kChatCompletions, R"({"messages": [{"role": "user", "content": "hi"}], "echo": true})", false},
    {Endpoint::kChatCompletions,
     R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"enable_thinking": false}})", true},
    {Endpoint::kChatCompletions,
     R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"messages": []}})", false},
};

std::string label(const Case& test_case) {
    return std::string(test_case.endpoint == Endpoint::kCompletions ? "completions " : "chat ") + test_case.body;
}

TEST(RequestDecoders, AcceptAndRejectTheSameBodies) {
    for (const Case& test_case : kCases) {
        const json body = json::parse(test_case.body);
        const Result<api::GenerationRequest> generation = api::parse_generation_request(test_case.endpoint, body);
        const auto completion = server::parse_completion_request(test_case.endpoint, body);
        const auto* error = std::get_if<server::RequestError>(&completion);
        EXPECT_EQ(generation.is_ok(), test_case.valid) << "api: " << label(test_case) << " "
                                                        << generation.status().message();
        EXPECT_EQ(error == nullptr, test_case.valid) << "server: " << label(test_case) << " "
                                                     << (error ? error->message : "");
        if (!generation.is_ok() && error != nullptr) {
            EXPECT_EQ(generation.status().message(), error->message) << label(test_case);
        }
    }
}

// Where both accept a body, the fields both decode have the same values.
void expect_same_values(const api::GenerationRequest& generation, const server::CompletionRequest& completion,
                        const std::string& where) {
    EXPECT_EQ(generation.model, completion.model) << where;
    EXPECT_EQ(generation.max_tokens, completion.max_tokens) << where;
    EXPECT_EQ(generation.seed, completion.seed) << where;
    EXPECT_EQ(generation.stream, completion.stream) << where;
    EXPECT_EQ(generation.include_usage, completion.include_usage) << where;
    EXPECT_EQ(generation.ignore_eos, completion.ignore_eos) << where;
    EXPECT_EQ(static_cast<float>(generation.temperature.value_or(1.0)), completion.sampling.temperature) << where;
    EXPECT_EQ(static_cast<float>(generation.top_p.value_or(1.0)), completion.sampling.top_p) << where;
    EXPECT_EQ(std::max<int64_t>(generation.top_k.value_or(0), 0), completion.sampling.top_k) << where;
    ASSERT_EQ(generation.prompts.size(), completion.prompts.size()) << where;
    for (size_t idx = 0; idx < generation.prompts.size(); ++idx) {
        EXPECT_EQ(generation.prompts[idx].text, completion.prompts[idx].text) << where;
        EXPECT_EQ(generation.prompts[idx].token_ids, completion.prompts[idx].token_ids) << where;
        EXPECT_EQ(generation.prompts[idx].is_tokens, completion.prompts[idx].is_tokens) << where;
    }
    ASSERT_EQ(generation.messages.size(), completion.messages.size()) << where;
    for (size_t idx = 0; idx < generation.messages.size(); ++idx) {
        EXPECT_EQ(generation.messages[idx].role, completion.messages[idx].role) << where;
        EXPECT_EQ(generation.messages[idx].content, completion.messages[idx].content) << where;
    }
}

// The bench and the router keep the new fields as given in `extra`, to pass them on.
TEST(RequestDecoders, NewFieldsTravelInExtra) {
    const json body = json::parse(R"({"prompt": "hi", "logit_bias": {"5": -100}, "min_tokens": 2, "max_tokens": 4,
                                     "stop_token_ids": [2], "echo": true, "best_of": 2, "suffix": "x"})");
    const Result<api::GenerationRequest> request = api::parse_generation_request(Endpoint::kCompletions, body);
    ASSERT_TRUE(request.is_ok()) << request.status().message();
    for (const char* field : {"logit_bias", "min_tokens", "stop_token_ids", "echo", "best_of", "suffix"}) {
        EXPECT_EQ(request.value().extra[field], body[field]) << field;
    }
    EXPECT_EQ(api::to_json(request.value())["logit_bias"], body["logit_bias"]) << "and are sent again";
    const json chat = json::parse(R"({"messages": [{"role": "user", "content": "hi"}],
                                     "chat_template_kwargs": {"enable_thinking": false}})");
    const Result<api::GenerationRequest> chat_request = api::parse_generation_request(Endpoint::kChatCompletions, chat);
    ASSERT_TRUE(chat_request.is_ok()) << chat_request.status().message();
    EXPECT_EQ(chat_request.value().extra["chat_template_kwargs"], chat["chat_template_kwargs"]);
}

TEST(RequestDecoders, AgreeOnTheValuesOfAcceptedBodies) {
    int num_compared = 0;
    for (const Case& test_case : kCases) {
        const json body = json::parse(test_case.body);
        const Result<api::GenerationRequest> generation = api::parse_generation_request(test_case.endpoint, body);
        const auto completion = server::parse_completion_request(test_case.endpoint, body);
        if (!generation.is_ok() || !std::holds_alternative<server::CompletionRequest>(completion)) continue;
        expect_same_values(generation.value(), std::get<server::CompletionRequest>(completion), label(test_case));
        ++num_compared;
    }
    EXPECT_GE(num_compared, 20);
    // Spot checks that the shared values are the intended ones, not merely equal.
    const auto both_take = server::parse_completion_request(
        Endpoint::kChatCompletions, json::parse(R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5,)"
                                                R"( "max_completion_tokens": 7, "seed": -1})"));
    ASSERT_TRUE(std::holds_alternative<server::CompletionRequest>(both_take));
    EXPECT_EQ(std::get<server::CompletionRequest>(both_take).max_tokens, 7) << "max_completion_tokens wins (vLLM)";
    EXPECT_EQ(std::get<server::CompletionRequest>(both_take).seed, -1);
}

}  // namespace
}  // namespace tern
