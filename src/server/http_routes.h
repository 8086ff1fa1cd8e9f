// tern serve's endpoints with the transport aside: a request in, an answer or an engine job out. The HTTP layer
// (http/server.h) reads requests, calls these and writes what they return.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "http/exchange.h"
#include "server/auth.h"
#include "server/choice_runner.h"
#include "server/completion_handler.h"
#include "dashboard/recent_requests.h"
#include "server/request_record.h"

namespace tern::server {

// Called after every engine request with its outcome (the per-request log line).
using RequestObserver = std::function<void(const std::string& endpoint, const Outcome& outcome)>;

// Work on the engine whose answer comes later: a generation or a batch of embeddings. Once delivered, its outcome
// goes to the request log.
class EngineJob : public http::PendingAnswer {
public:
    EngineJob(std::string path, const RequestObserver& observer) : path_(std::move(path)), observer_(observer) {}
    // Once finished: the status and body (of a whole answer, or an error) and the request log's figures.
    virtual const Outcome& outcome() const = 0;

    http::Answer whole_answer() const override;
    void delivered() override;

private:
    std::string path_;
    const RequestObserver& observer_;
};

// A generation request whose choices are submitted.
class GenerationJob final : public EngineJob {
public:
    GenerationJob(std::string path, const RequestObserver& observer, ServingContext& context, PreparedRequest prepared);
    // Submits every choice; on failure the outcome to answer at once (429 when the queue is full, 503 while draining).
    std::optional<Outcome> submit(std::chrono::steady_clock::time_point start);

    http::Delivery delivery() const override {
        return prepared_.request.stream ? http::Delivery::kStream : http::Delivery::kWhole;
    }
    void set_listener(const std::function<void()>& listener) override { runner_.set_listener(listener); }
    bool poll(std::vector<std::string>& events) override;
    void client_gone() override { producer_->client_gone(); }
    const Outcome& outcome() const override { return producer_->outcome(); }

private:
    PreparedRequest prepared_;  // before the runner and the producer, which point at it
    ChoiceRunner runner_;
    std::unique_ptr<ResponseProducer> producer_;
};

class Routes final : public http::Handler {
public:
    // `context` and `ready` belong to the server and outlive the routes; `context` is null until the model is loaded.
    // `admin_keys` open /debug/trace; with none the endpoint does not exist.
    Routes(ApiKeys api_keys, ApiKeys admin_keys, std::function<std::string()> render_metrics, RequestObserver on_request,
           const std::atomic<ServingContext*>& context, const std::atomic<bool>& ready);

    // What is answered on the I/O thread without tokenizing: health, readiness, metrics, the dashboard page and its
    // recent requests, models, unknown paths and refusals (401; 503 while loading). nullopt: the request goes to route(), on a worker thread.
    std::optional<http::Answer> answer_at_once(const http::Request& request) const override;
    // Completions, chat completions (submitted to the engine, or refused), embeddings, tokenize, detokenize.
    http::RouteResult route(const http::Request& request) const override;

private:
    std::optional<http::Answer> refusal(const http::Request& request) const;
    http::Answer refused(const std::string& path, const Outcome& outcome) const;
    http::Answer ready_answer() const;
    std::optional<http::Answer> trace_refusal(const http::Request& request) const;
    http::Answer models_answer(const ServingContext& context) const;
    http::RouteResult generation(ServingContext& context, const http::Request& request, api::Endpoint endpoint) const;
    http::RouteResult embeddings(ServingContext& context, const http::Request& request) const;
    http::Answer tokenize(const ServingContext& context, const http::Request& request) const;
    http::Answer detokenize(const ServingContext& context, const http::Request& request) const;

    ApiKeys api_keys_;
    ApiKeys admin_keys_;
    std::function<std::string()> render_metrics_;
    std::unique_ptr<dashboard::RecentRequests> recent_ = std::make_unique<dashboard::RecentRequests>();
    RequestObserver on_request_;  // records into recent_, then calls the server's observer
    const std::atomic<ServingContext*>& context_;
    const std::atomic<bool>& ready_;
};

// An outcome as an answer (Retry-After on 429 and 503).
http::Answer outcome_answer(const Outcome& outcome);

}  // namespace tern::server
