// The server's endpoints with the transport aside: a request in, an answer or a generation job out. The HTTP layer
// (http_server.cc) reads requests, calls these and writes what they return.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "server/auth.h"
#include "server/choice_runner.h"
#include "server/completion_handler.h"

namespace tern::server {

struct IncomingRequest {
    std::string method;  // "GET", "POST", ...
    std::string path;    // the target without its query string
    std::string authorization;
    std::string body;
};

// A whole response.
struct HttpAnswer {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
};

// A generation request whose choices are submitted: its outputs go to the client as the engine makes them. Kept
// behind a unique_ptr, since the runner and the producer point at `prepared`.
struct GenerationJob {
    std::string path;
    PreparedRequest prepared;
    std::unique_ptr<ChoiceRunner> runner;
    std::unique_ptr<ResponseProducer> producer;
    std::chrono::steady_clock::time_point start;

    bool streamed() const { return prepared.request.stream; }
};

using RouteResult = std::variant<HttpAnswer, std::unique_ptr<GenerationJob>>;

class Routes {
public:
    // `context` and `ready` belong to the server and outlive the routes; `context` is null until the model is loaded.
    Routes(ApiKeys api_keys, std::function<std::string()> render_metrics,
           const std::atomic<ServingContext*>& context, const std::atomic<bool>& ready);

    // What is answered on the I/O thread without tokenizing: health, readiness, metrics, models, unknown paths and
    // refusals (401; 503 while loading). nullopt: the request goes to route(), on a worker thread.
    std::optional<HttpAnswer> answer_at_once(const IncomingRequest& request) const;
    // Completions, chat completions (submitted to the engine, or refused), tokenize, detokenize.
    RouteResult route(const IncomingRequest& request) const;

    static HttpAnswer json_answer(int status, const std::string& body);
    static HttpAnswer error_answer(int status, const std::string& message);

private:
    std::optional<HttpAnswer> refusal(const IncomingRequest& request) const;
    HttpAnswer ready_answer() const;
    HttpAnswer models_answer(const ServingContext& context) const;
    RouteResult generation(ServingContext& context, const IncomingRequest& request, api::Endpoint endpoint) const;
    HttpAnswer tokenize(const ServingContext& context, const IncomingRequest& request) const;
    HttpAnswer detokenize(const ServingContext& context, const IncomingRequest& request) const;

    ApiKeys api_keys_;
    std::function<std::string()> render_metrics_;
    const std::atomic<ServingContext*>& context_;
    const std::atomic<bool>& ready_;
};

// An outcome as an answer (Retry-After on 429 and 503).
HttpAnswer outcome_answer(const Outcome& outcome);

}  // namespace tern::server
