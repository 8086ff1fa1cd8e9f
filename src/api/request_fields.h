// The rules for the fields of OpenAI request bodies, kept in one place: which fields each endpoint takes, their types
// and ranges, which are accepted and ignored, and which are refused. It does not convert values to sampling or
// engine settings: the decoders that use it do.
//
// NOTE(issue #17): tern has two decoders of these bodies, api::parse_generation_request (the bench, and later the
// router, which keep most fields as JSON to pass on) and server::parse_completion_request (tern serve, which turns
// them into sampling and engine settings). They need different outputs, so they stay two functions. The rules are
// shared instead: both call check_request_body() first and read prompts, messages and max_tokens with the helpers
// below, so they accept and reject the same bodies with the same message. tests/server/request_decoders_test.cc
// feeds the same bodies to both.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/openai_types.h"

namespace tern::api {

// A rejected body: what to change, and the parameter at fault (OpenAI's error `param`; empty when none is).
struct FieldError {
    std::string message;
    std::string param;
};

inline constexpr int kMaxChoices = 16;      // n
inline constexpr int kMaxTopLogprobs = 20;  // OpenAI's limit
inline constexpr int kMaxStopStrings = 16;
inline constexpr int kMaxStopTokenIds = 256;  // each generated token is compared with every stop token
// chat_template_kwargs nest at most this deep: well inside what the chat interpreter builds (chat::kMaxValueDepth).
inline constexpr int kMaxTemplateKwargsDepth = 32;
inline constexpr float kMaxLogitBias = 100.0f;  // OpenAI's range: [-100, 100]

// Checks every field of `body` for `endpoint` and returns the first problem, or nullopt when the body is valid:
//   - a field tern does not know, or knows and cannot honour (functions, prediction, ...), is refused by name, as
//     OpenAI refuses it (vLLM only logs a warning): a client must not believe an option took effect;
//   - a few harmless fields are accepted and ignored (user, metadata, ...: the list is in field_rules() in the .cc);
//   - a value of the wrong type or out of range names the field and the accepted range;
//   - a null value counts as absent (clients send null for "not set"), except for prompt / messages, required.
// Fields are checked in name order, so the same body always gets the same error.
std::optional<FieldError> check_request_body(Endpoint endpoint, const nlohmann::json& body);

// The field, or nullptr when absent or null.
const nlohmann::json* find_field(const nlohmann::json& body, std::string_view name);

// The value of a field of a checked body as T (of the type its rule checked), or nullopt when absent or null.
template <typename T>
std::optional<T> field_value(const nlohmann::json& body, std::string_view name) {
    const nlohmann::json* value = find_field(body, name);
    return value == nullptr ? std::nullopt : std::optional<T>(value->get<T>());
}

// The completions `prompt`: a string, a list of token ids, or a list of those (a batch, one choice set each).
std::optional<FieldError> decode_prompts(const nlohmann::json& prompt, std::vector<PromptInput>* prompts);
// Chat `messages`: {role, content} objects; content a string, or a list of text parts that are joined.
std::optional<FieldError> decode_messages(const nlohmann::json& messages, std::vector<ChatMessage>* messages_out);
// logit_bias, in OpenAI's object form {"token id": bias} or llama-server's array form [[token_id, bias], ...]; a bias
// is a number in [-100, 100], or false (llama-server's "never"), decoded as -inf. Ids are checked to be >= 0 only: the
// vocabulary is the server's to check. Pairs come in the body's order (an id may repeat in the array form).
std::optional<FieldError> decode_logit_bias(const nlohmann::json& value, std::vector<std::pair<int32_t, float>>* biases);
// stop_token_ids (vLLM): a list of at most kMaxStopTokenIds token ids, each >= 0.
std::optional<FieldError> decode_stop_token_ids(const nlohmann::json& value, std::vector<int32_t>* ids);
// max_completion_tokens (chat) when given, else max_tokens, else nullopt (the server's default). For a checked body.
std::optional<int64_t> max_tokens_of(Endpoint endpoint, const nlohmann::json& body);

}  // namespace tern::api
