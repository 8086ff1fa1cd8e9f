// OpenAI response bodies: completions and chat completions, whole or as SSE chunks, and errors in OpenAI's format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/openai_types.h"
#include "tools/tool_call_parser.h"

namespace tern::server {

using api::error_body;

struct TokenLogprob {
    std::string token;              // the token's text piece
    std::optional<float> logprob;   // none for an echoed prompt's first token, which follows nothing
    std::vector<std::pair<std::string, float>> top;  // most likely first
};

// One token at a prompt position as vLLM's prompt_logprobs gives it: {"<id>": {logprob, rank, decoded_token}}.
struct RankedToken {
    int32_t id = 0;
    std::string piece;
    float logprob = 0;
    int64_t rank = 1;  // 1: the most likely
};
using PositionLogprobs = std::vector<RankedToken>;  // the prompt's token first, then the most likely others

struct ChoiceResult {
    int index = 0;
    std::string text;
    std::string finish_reason;  // "stop", "length" or "tool_calls" ("abort" never reaches a client)
    std::vector<TokenLogprob> logprobs;
    int64_t completion_tokens = 0;
    // With prompt_logprobs: one per prompt token from the second on.
    std::optional<std::vector<PositionLogprobs>> prompt_logprobs;
    // Chat with tools: the calls parsed out of the text (`text` is then what lies outside them; null when empty).
    std::vector<tools::ToolCall> tool_calls;
    // A reasoning model's thinking, out of `text` (its message's reasoning_content; absent when empty).
    std::string reasoning;
};

struct ResponseMeta {
    api::Endpoint endpoint = api::Endpoint::kCompletions;
    std::string id;     // "cmpl-..." or "chatcmpl-..."
    int64_t created = 0;  // unix seconds
    std::string model;
    bool with_logprobs = false;
};

// Completions: each choice carries its prompt's prompt_logprobs; chat: the response does, once (vLLM's layout).
nlohmann::json completion_response(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                                   const api::Usage& usage);

// One streamed chunk of choice `index`: new text (and its tokens' logprobs), and the finish reason on the last one.
// Chat chunks carry the assistant role on a choice's first chunk, and tool-call deltas in delta.tool_calls: a
// call's first as {index, id, type, function: {name, arguments: ""}}, then {index, function: {arguments}}.
// A reasoning model's thinking goes in delta.reasoning_content, before the content.
nlohmann::json stream_chunk(const ResponseMeta& meta, int index, const std::string& text,
                            const std::vector<TokenLogprob>& logprobs, const std::optional<std::string>& finish_reason,
                            bool first, const std::vector<tools::ToolCallDelta>& tool_calls = {},
                            const std::string& reasoning = "");
nlohmann::json usage_chunk(const ResponseMeta& meta, const api::Usage& usage);


}  // namespace tern::server
