// One /v1/completions or /v1/chat/completions request, HTTP aside: the prompts are tokenized (chat messages
// rendered first), checked against the context, submitted as one engine request per choice, and the outputs turned
// into text (stop strings, whole UTF-8 characters) and OpenAI bodies, whole or streamed as SSE events.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar_cache.h"
#include "server/chat_prompt.h"
#include "server/request_parser.h"
#include "server/responses.h"
#include "server/tool_calls.h"
#include "serving/async_engine.h"
#include "tokenizer/tokenizer.h"

namespace tern::server {

struct ServingContext {
    serving::AsyncEngine& engine;
    const Tokenizer& tokenizer;
    std::string model_name;
    int64_t max_model_len = 0;
    // Renders chat messages into prompt text (the model's template, or the plain fallback format).
    ChatRenderer render_chat;
    engine::Pooling pooling = engine::Pooling::kMean;  // of /v1/embeddings (--pooling)
    int64_t embedding_dim = 0;                          // the length of an embedding
    // Compiled grammars for structured output; null: requests asking for it are refused.
    grammar::GrammarCache* grammars = nullptr;
    // How tool calls are spelled, parsed and forced: the chat template's format, else Hermes (the most common one;
    // a model with no tool format in its template sees the tools only if its template shows them).
    tools::ToolFormat tool_format = tools::ToolFormat::kHermes;
    // A reasoning model's thinking markers (from its template, or --reasoning-parser); nullopt: its output is all
    // answer.
    std::optional<tools::ReasoningFormat> reasoning;
};

// What a request turned into: an HTTP status and body (the whole response, or an error), plus the figures of the
// per-request log line.
struct Outcome {
    std::string id;  // the response's "cmpl-..." / "chatcmpl-...", once it ran
    int status = 200;
    nlohmann::json body;
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    double ttft_ms = -1;
    double total_ms = 0;
    double itl_p50_ms = 0, itl_p99_ms = 0, itl_max_ms = 0;  // gaps between tokens as the server took them
    std::string finish_reason;
};

struct ChoiceDelta;

// A request whose prompts are tokenized and checked, ready to run.
struct PreparedRequest {
    CompletionRequest request;
    std::vector<std::vector<int32_t>> prompt_tokens;  // one per prompt
    std::vector<std::string> echo_texts;              // with `echo`: each prompt's text, which its choices start with
    int max_tokens = 0;
    ResponseMeta meta;
    // The constraint's, or the one forcing a tool call, when the request has one.
    std::shared_ptr<const grammar::CompiledGrammar> grammar;
    std::optional<ToolParsing> tool_parsing;  // set when the choices' text is parsed for tool calls
    // Chat with a reasoning model: where its output begins (read off the rendered prompt).
    std::optional<ThinkingFirst> thinking;
};

// Tokenizes and checks `request`; on failure returns the 4xx outcome to send.
std::variant<PreparedRequest, Outcome> prepare_request(const ServingContext& context, CompletionRequest request);

class ChoiceRunner;

// Turns the outputs of a request whose choices `runner` has submitted into what its client gets, without blocking:
// a streamed request's SSE event data (chunks, the usage chunk when asked, an error event on failure, "[DONE]"), or,
// once finished, a whole response. Both end with an outcome for the request log.
class ResponseProducer {
public:
    ResponseProducer(ChoiceRunner& runner, const PreparedRequest& prepared, std::chrono::steady_clock::time_point start);

    // Takes every output available, waiting up to `wait` for the first; a streamed request's event data (without
    // the "data: " framing) is appended to `events`. Returns finished().
    bool poll(std::chrono::milliseconds wait, std::vector<std::string>& events);
    bool finished() const { return finished_; }
    // The client went away: the engine's work is aborted at once (its KV freed) and the request is finished.
    void client_gone();
    // Once finished: the status and body (the whole response, or an error) and the log figures.
    const Outcome& outcome() const { return outcome_; }

private:
    void take(const ChoiceDelta& delta, std::vector<std::string>& events);
    void finish(std::vector<std::string>& events);

    ChoiceRunner& runner_;
    const PreparedRequest& prepared_;
    std::chrono::steady_clock::time_point start_;
    bool finished_ = false;
    Outcome outcome_;
};

// Writes one SSE event's data (without the "data: " framing); returns false once the client is gone.
using EventWriter = std::function<bool(std::string_view data)>;

// Runs a request to its end on the calling thread (tests, tools): with a writer, streams its events; without one,
// returns the whole response in the outcome.
Outcome run_request(ChoiceRunner& runner, const PreparedRequest& prepared, const EventWriter* writer,
                    std::chrono::steady_clock::time_point start);

// An error outcome with OpenAI's body.
Outcome error_outcome(int status, const std::string& message, const std::string& param = "");

// The outcome of an engine-side failure: a full queue is the client's to retry later (429), a server that is stopping
// or restarting is 503, a failure of the engine itself 500, and the rest is bad input (400).
Outcome status_outcome(const Status& status, const std::string& param = "");

}  // namespace tern::server
