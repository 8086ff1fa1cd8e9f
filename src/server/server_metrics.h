// The server's Prometheus metrics, named as vLLM names them (prefix `tern:` instead of `vllm:`) so that existing
// dashboards and routers work: request latency histograms observed when each request finishes, token and
// prefix-cache counters from the engine's counters after each step, and gauges read at scrape time.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "metrics/registry.h"
#include "serving/async_engine.h"

namespace tern::server {

class ServerMetrics {
public:
    static Result<std::unique_ptr<ServerMetrics>> create(int64_t weight_bytes, int64_t kv_bytes);

    // Reads running / waiting / KV usage from `engine` at every scrape; call once the engine exists.
    void attach(const serving::AsyncEngine& engine);
    void on_finish(const engine::RequestOutput& output);  // engine thread
    void on_step(const engine::EngineStats& stats);       // engine thread
    void on_response(const std::string& endpoint, int status);  // any thread, once per answered request
    std::string render() const { return registry_.render(); }

private:
    ServerMetrics() = default;
    Status register_all(int64_t weight_bytes, int64_t kv_bytes);

    metrics::Registry registry_;
    metrics::Family<metrics::Histogram>* ttft_ = nullptr;
    metrics::Family<metrics::Histogram>* inter_token_ = nullptr;
    metrics::Family<metrics::Histogram>* time_per_output_token_ = nullptr;
    metrics::Family<metrics::Histogram>* e2e_ = nullptr;
    metrics::Family<metrics::Histogram>* queue_time_ = nullptr;
    metrics::Family<metrics::Counter>* success_ = nullptr;
    metrics::Family<metrics::Counter>* prompt_tokens_ = nullptr;
    metrics::Family<metrics::Counter>* generation_tokens_ = nullptr;
    metrics::Family<metrics::Counter>* prefix_queries_ = nullptr;
    metrics::Family<metrics::Counter>* prefix_hits_ = nullptr;
    metrics::Family<metrics::Counter>* preemptions_ = nullptr;
    metrics::Family<metrics::Counter>* spec_drafts_ = nullptr;
    metrics::Family<metrics::Counter>* spec_draft_tokens_ = nullptr;
    metrics::Family<metrics::Counter>* spec_accepted_tokens_ = nullptr;
    metrics::Family<metrics::Gauge>* running_ = nullptr;
    metrics::Family<metrics::Gauge>* waiting_ = nullptr;
    metrics::Family<metrics::Gauge>* kv_usage_ = nullptr;
    metrics::Family<metrics::Gauge>* memory_ = nullptr;
    metrics::Family<metrics::Counter>* responses_ = nullptr;
    engine::EngineStats last_stats_;  // engine thread only: the counters' previous values
};

}  // namespace tern::server
