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

// Work on the engine whose answer comes later: a generation (a whole body, or SSE events as they come) or a batch of
// embeddings. The HTTP session polls it whenever the engine thread signals that an output arrived.
class PendingAnswer {
public:
    explicit PendingAnswer(std::string path) : path_(std::move(path)) {}
    virtual ~PendingAnswer() = default;
    const std::string& path() const { return path_; }

    virtual bool streamed() const = 0;
    // `listener` is called on the engine thread when an output arrives: it must only hand work to another thread.
    // The destructor clears it before anything else goes.
    virtual void set_listener(const std::function<void()>& listener) = 0;
    // Takes what arrived, without waiting; a streamed answer appends SSE event data. Returns whether it finished.
    virtual bool poll(std::vector<std::string>& events) = 0;
    // The client left: the engine's work is aborted at once and the answer is finished (499 in the log).
    virtual void client_gone() = 0;
    // Once finished: the status and body (of a whole answer, or an error) and the request log's figures.
    virtual const Outcome& outcome() const = 0;

private:
    std::string path_;
};

// A generation request whose choices are submitted.
class GenerationJob final : public PendingAnswer {
public:
    GenerationJob(std::string path, ServingContext& context, PreparedRequest prepared);
    // Submits every choice; on failure the outcome to answer at once (429 when the queue is full, 503 while draining).
    std::optional<Outcome> submit(std::chrono::steady_clock::time_point start);

    bool streamed() const override { return prepared_.request.stream; }
    void set_listener(const std::function<void()>& listener) override { runner_.set_listener(listener); }
    bool poll(std::vector<std::string>& events) override;
    void client_gone() override { producer_->client_gone(); }
    const Outcome& outcome() const override { return producer_->outcome(); }

private:
    PreparedRequest prepared_;  // before the runner and the producer, which point at it
    ChoiceRunner runner_;
    std::unique_ptr<ResponseProducer> producer_;
};

using RouteResult = std::variant<HttpAnswer, std::unique_ptr<PendingAnswer>>;

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
    RouteResult embeddings(ServingContext& context, const IncomingRequest& request) const;
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
