// OpenAI request bodies of /v1/completions and /v1/chat/completions decoded into what the server needs, with every
// value checked: a wrong type or range names the parameter (OpenAI's error `param`). Unknown fields are ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/openai_types.h"
#include "sampling/sampling_params.h"

namespace tern::server {

// A rejected request: the message, and the parameter at fault (empty when none is).
struct RequestError {
    std::string message;
    std::string param;
};

// One prompt of a completions request: text to tokenize, or token ids as given.
struct PromptInput {
    std::string text;
    std::vector<int32_t> token_ids;
    bool is_tokens = false;
};

struct CompletionRequest {
    api::Endpoint endpoint = api::Endpoint::kCompletions;
    std::string model;
    std::vector<PromptInput> prompts;        // completions: one or more prompts
    std::vector<api::ChatMessage> messages;  // chat
    std::optional<int64_t> max_tokens;       // max_tokens, or max_completion_tokens for chat
    SamplingParams sampling;
    std::vector<std::string> stop;
    int n = 1;
    bool logprobs = false;
    int top_logprobs = 0;
    int priority = 0;
    bool ignore_eos = false;
    bool stream = false;
    bool include_usage = false;
    std::string user;
};

inline constexpr int kMaxChoices = 16;      // n
inline constexpr int kMaxTopLogprobs = 20;  // OpenAI's limit
inline constexpr int kMaxStopStrings = 16;

// Decodes `body` for `endpoint`; the error says what to change.
std::variant<CompletionRequest, RequestError> parse_completion_request(api::Endpoint endpoint,
                                                                         const nlohmann::json& body);

}  // namespace tern::server
