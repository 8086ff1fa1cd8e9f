// OpenAI request bodies of /v1/completions and /v1/chat/completions decoded into what the server needs. The field
// rules (which fields, their types and ranges, which are refused or ignored) are api/request_fields.h's, shared with
// api::parse_generation_request; this file turns checked values into sampling and engine settings.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/openai_types.h"
#include "api/output_constraint.h"
#include "api/request_fields.h"
#include "api/tools.h"
#include "engine/engine_config.h"
#include "sampling/sampling_params.h"

namespace tern::server {

// A rejected request: the message, and the parameter at fault (empty when none is).
struct RequestError {
    std::string message;
    std::string param;
};

using api::PromptInput;

struct CompletionRequest {
    api::Endpoint endpoint = api::Endpoint::kCompletions;
    std::string model;
    std::vector<PromptInput> prompts;        // completions: one or more prompts
    std::vector<api::ChatMessage> messages;  // chat
    std::optional<int64_t> max_tokens;       // max_tokens, or max_completion_tokens for chat
    SamplingParams sampling;                 // its seed comes from choose_seed(seed), when the request is prepared
    std::optional<int64_t> seed;             // as given; absent: a random one per request
    std::vector<std::string> stop;
    int n = 1;
    bool logprobs = false;
    int top_logprobs = 0;
    int priority = 0;
    bool ignore_eos = false;
    bool stream = false;
    bool include_usage = false;
    // sampling.logit_bias and sampling.min_tokens come from the fields of those names.
    std::vector<int32_t> stop_token_ids;  // vLLM's: end generation like EOS (even with ignore_eos)
    bool echo = false;                    // completions: the prompt's text comes first in each choice
    int best_of = 0;                      // completions: choices generated per prompt, the n best returned; 0: n
    std::optional<std::string> suffix;    // completions: fill-in-the-middle, the text after the completion
    nlohmann::json chat_template_kwargs = nlohmann::json::object();  // chat: extra template variables (vLLM)
    std::string cache_salt;  // vLLM's: shares cached prefixes only with requests of the same salt
    // vLLM's: each prompt token's log-probability (after the first) with this many alternatives, in
    // choices[i].prompt_logprobs (completions) or the response's prompt_logprobs (chat). Not streamed.
    std::optional<int> prompt_logprobs;
    // Structured output (response_format, guided_*, ...): the text must follow it.
    std::optional<api::OutputConstraint> constraint;
    // Chat: tools, tool_choice and parallel_tool_calls; nullopt without tools.
    std::optional<api::ToolRequest> tools;
};

using api::kMaxChoices;
using api::kMaxStopStrings;
using api::kMaxTopLogprobs;

// Decodes `body` for `endpoint`; the error says what to change.
std::variant<CompletionRequest, RequestError> parse_completion_request(api::Endpoint endpoint,
                                                                         const nlohmann::json& body);

// The sampler's seed for a request: the given one (its bits), else a fresh random one, so that identical unseeded
// requests differ as they do with OpenAI and vLLM (issue #17; `tern generate` keeps its fixed default). The choices
// of one request add their index to it. Thread-safe.
uint64_t choose_seed(std::optional<int64_t> given);

// A non-zero priority under the fcfs policy is refused naming `priority`, as vLLM refuses it, before the engine
// would refuse it without naming the parameter.
std::optional<RequestError> check_priority(const CompletionRequest& request, engine::SchedulingPolicy policy);

}  // namespace tern::server
