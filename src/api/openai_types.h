// OpenAI-compatible request types for /v1/completions and /v1/chat/completions, with JSON encoding and validated
// decoding. Shared by the server, the router and the bench: it knows nothing of the engine or of HTTP.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tern::api {

enum class Endpoint { kCompletions, kChatCompletions };

// "/v1/completions" or "/v1/chat/completions".
std::string_view endpoint_path(Endpoint endpoint);
// Accepts the two paths above, with or without the "/v1" prefix; anything else is kInvalidArgument.
Result<Endpoint> endpoint_from_path(std::string_view path);

struct Usage {
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    int64_t total_tokens = 0;
    // OpenAI's prompt_tokens_details.cached_tokens: prompt tokens served from the prefix cache. Unset: not reported.
    std::optional<int64_t> cached_tokens;
};

// A call an assistant message made, as a client sends it back in the conversation.
struct MessageToolCall {
    std::string id;
    std::string name;
    std::string arguments;  // JSON text of an object, as sent ("" counts as {}, as vLLM reads it)
};

struct ChatMessage {
    std::string role;     // "system", "developer", "user", "assistant" or "tool"
    std::string content;  // plain text; content-part arrays are flattened to their text parts; null is ""
    std::vector<MessageToolCall> tool_calls;  // assistant: the calls it made
    std::string tool_call_id;                 // tool: the call this message answers
    std::string name;                         // optional (a tool result's function name, a participant's name)
    std::string reasoning_content;            // assistant: its thinking, for a reasoning model's template
};

// One prompt of a completions request: text to tokenize, or token ids as given (vLLM and llama.cpp accept them).
struct PromptInput {
    std::string text;
    std::vector<int32_t> token_ids;
    bool is_tokens = false;
};

// One generation request in the shape of either endpoint.
struct GenerationRequest {
    Endpoint endpoint = Endpoint::kCompletions;
    std::string model;
    std::vector<PromptInput> prompts;       // completions: one prompt, or several (a batch)
    std::vector<ChatMessage> messages;      // chat completions
    std::optional<int64_t> max_tokens;      // absent: the server's default
    bool stream = false;
    bool include_usage = false;             // stream_options.include_usage: ask for a final usage chunk
    bool ignore_eos = false;                // a vLLM / llama.cpp extension: generate exactly max_tokens
    std::optional<double> temperature;
    std::optional<double> top_p;
    std::optional<int64_t> top_k;
    std::optional<int64_t> seed;            // any int64, as OpenAI and vLLM take it
    // Encoding: further body fields, merged last (overriding the above). Decoding: the accepted fields that have no
    // member above (n, stop, penalties, user, ...), as given, so that a router passes them on.
    nlohmann::json extra = nlohmann::json::object();
};

// The request body. Chat requests send "max_tokens" too: every OpenAI-compatible server we target accepts it.
nlohmann::json to_json(const GenerationRequest& request);

// Decodes a request body for `endpoint` under the rules of request_fields.h, which tern serve's decoder shares:
// kInvalidArgument, with check_request_body()'s message, for any body the server would refuse.
Result<GenerationRequest> parse_generation_request(Endpoint endpoint, const nlohmann::json& body);

nlohmann::json to_json(const Usage& usage);
// Reads prompt_tokens / completion_tokens / total_tokens; a missing total is their sum.
Result<Usage> parse_usage(const nlohmann::json& value);

// An error as servers report it: OpenAI's {"error": {"message", "type", "code"}} or vLLM's flat
// {"object": "error", "message", "type", "code"}.
struct ApiError {
    std::string message;
    std::string type;
    std::string code;  // numbers are kept as their decimal text
};

nlohmann::json to_json(const ApiError& error);
// Returns the error carried by `value`, or nullopt when it is not an error object.
std::optional<ApiError> find_api_error(const nlohmann::json& value);
// Parses an HTTP error body; a body that is not JSON becomes an ApiError whose message is the (trimmed) text.
ApiError parse_error_body(std::string_view body);

// The error body tern answers with: {"error": {"message", "type" (from the status), "code", "param"}}.
nlohmann::json error_body(int status, const std::string& message, const std::string& param = "");

}  // namespace tern::api
