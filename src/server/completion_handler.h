// One /v1/completions or /v1/chat/completions request, HTTP aside: the prompts are tokenized (chat messages
// rendered first), checked against the context, submitted as one engine request per choice, and the outputs turned
// into text (stop strings, whole UTF-8 characters) and OpenAI bodies, whole or streamed as SSE events.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/request_parser.h"
#include "server/responses.h"
#include "serving/async_engine.h"
#include "tokenizer/tokenizer.h"

namespace tern::server {

struct ServingContext {
    serving::AsyncEngine& engine;
    const Tokenizer& tokenizer;
    std::string model_name;
    int64_t max_model_len = 0;
    // Renders chat messages into prompt text (the model's template, or the plain fallback format).
    std::function<Result<std::string>(const std::vector<api::ChatMessage>&)> render_chat;
};

// What a request turned into: an HTTP status and body (the whole response, or an error), plus the figures of the
// per-request log line.
struct Outcome {
    int status = 200;
    nlohmann::json body;
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    double ttft_ms = -1;
    double total_ms = 0;
    std::string finish_reason;
};

// A request whose prompts are tokenized and checked, ready to run.
struct PreparedRequest {
    CompletionRequest request;
    std::vector<std::vector<int32_t>> prompt_tokens;  // one per prompt
    int max_tokens = 0;
    ResponseMeta meta;
};

// Tokenizes and checks `request`; on failure returns the 4xx outcome to send.
std::variant<PreparedRequest, Outcome> prepare_request(const ServingContext& context, CompletionRequest request);

// Writes one SSE event's data (without the "data: " framing); returns false once the client is gone. Called with
// empty data, only checks that the client is still there.
using EventWriter = std::function<bool(std::string_view data)>;

class ChoiceRunner;

// Runs a prepared request whose choices `runner` has submitted. With a writer, streams chunks, the usage chunk when
// asked, and "[DONE]"; a client that goes away aborts the request's engine work at once. Without one, returns the
// whole response in the outcome.
Outcome run_request(ChoiceRunner& runner, const PreparedRequest& prepared, const EventWriter* writer,
                    std::chrono::steady_clock::time_point start);

// An error outcome with OpenAI's body.
Outcome error_outcome(int status, const std::string& message, const std::string& param = "");

}  // namespace tern::server
