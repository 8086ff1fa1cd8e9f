// OpenAI response bodies: completions and chat completions, whole or as SSE chunks, and errors in OpenAI's format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/openai_types.h"

namespace tern::server {

struct TokenLogprob {
    std::string token;  // the token's text piece
    float logprob = 0;
    std::vector<std::pair<std::string, float>> top;  // most likely first
};

struct ChoiceResult {
    int index = 0;
    std::string text;
    std::string finish_reason;  // "stop" or "length" ("abort" never reaches a client)
    std::vector<TokenLogprob> logprobs;
    int64_t completion_tokens = 0;
};

struct ResponseMeta {
    api::Endpoint endpoint = api::Endpoint::kCompletions;
    std::string id;     // "cmpl-..." or "chatcmpl-..."
    int64_t created = 0;  // unix seconds
    std::string model;
    bool with_logprobs = false;
};

nlohmann::json completion_response(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                                   const api::Usage& usage);

// One streamed chunk of choice `index`: new text (and its tokens' logprobs), and the finish reason on the last one.
// Chat chunks carry the assistant role on a choice's first chunk.
nlohmann::json stream_chunk(const ResponseMeta& meta, int index, const std::string& text,
                            const std::vector<TokenLogprob>& logprobs, const std::optional<std::string>& finish_reason,
                            bool first);
nlohmann::json usage_chunk(const ResponseMeta& meta, const api::Usage& usage);

// {"error": {"message", "type", "param", "code"}} with the type OpenAI uses for `status`.
nlohmann::json error_body(int status, const std::string& message, const std::string& param = "");

}  // namespace tern::server
