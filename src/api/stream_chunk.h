// One server-sent event of a streamed completion ("data: {...}"), decoded for either endpoint: completions put
// text in choices[].text, chat in choices[].delta.content (or delta.reasoning_content). Servers differ in where usage
// comes (llama.cpp: in the chunk with finish_reason; vLLM: a last chunk with no choices, only when asked) and whether
// it comes at all, so every field is optional.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/openai_types.h"
#include "base/status.h"

namespace tern::api {

struct StreamChoice {
    int64_t index = 0;
    std::string text;                          // the generated text in this chunk (may be empty)
    std::optional<std::string> role;           // chat: the role announced by the first delta
    std::optional<std::string> finish_reason;  // "stop", "length", ... on the choice's last chunk
};

struct StreamChunk {
    std::string id;
    std::string model;
    std::vector<StreamChoice> choices;
    std::optional<Usage> usage;
    std::optional<ApiError> error;  // a server that fails mid-stream sends {"error": {...}} as a chunk

    // True when some choice carries generated text, i.e. the chunk delivers at least one token.
    bool has_text() const;
};

// The data payload that ends an OpenAI stream.
inline constexpr std::string_view kDoneMarker = "[DONE]";
bool is_done_marker(std::string_view data);

// Decodes one event's data. Not JSON, or JSON of the wrong shape, is kInvalidArgument with the reason.
Result<StreamChunk> parse_stream_chunk(std::string_view data);

// Encodes `chunk` as `endpoint` streams it (object "text_completion" or "chat.completion.chunk"), for servers.
nlohmann::json to_json(const StreamChunk& chunk, Endpoint endpoint, int64_t created_unix_s);

}  // namespace tern::api
