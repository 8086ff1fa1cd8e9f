// Offline engine throughput, as vLLM's benchmark_throughput: the workload of `tern bench serve` (lengths, shared
// prefix) fed straight into an in-process Engine, no HTTP, a closed loop of at most max_concurrency requests in
// flight. Reports requests/s, tokens/s and the latency percentiles the engine's timings give, plus how full the KV
// pool got. One optional late arrival (a long prompt after some seconds) shows what chunked prefill does to the
// streams already decoding.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "bench/stats.h"
#include "bench/workload.h"
#include "engine/engine.h"

namespace tern::engine {

struct EngineBenchOptions {
    bench::WorkloadOptions workload;     // token-id prompts of the model's vocabulary
    int max_concurrency = 0;             // requests in flight; 0 = all at once
    int64_t late_prompt_len = 0;         // > 0: one extra request of this many prompt tokens ...
    double late_prompt_after_s = 0.0;    // ... queued this many seconds after the start
    int64_t late_output_len = 16;
    // Every request generates exactly its output length (no stop token), as vLLM's benchmark with ignore_eos.
};

struct EngineBenchResult {
    double duration_s = 0;
    int64_t num_requests = 0;
    int64_t input_tokens = 0;
    int64_t output_tokens = 0;
    double requests_per_s = 0;
    double output_tokens_per_s = 0;
    double total_tokens_per_s = 0;
    bench::Distribution ttft_ms, tpot_ms, itl_ms, queue_ms, e2e_ms;  // of the workload's requests
    double peak_kv_fill = 0;            // most tokens with KV held by live sequences / pool token capacity
    double peak_kv_usage = 0;           // most blocks referenced / usable blocks
    int64_t num_steps = 0;
    int64_t num_preemptions = 0;
    double prefix_cache_hit_rate = 0;
    // Speculative decoding (when on): drafts verified (per request and step), draft tokens, and those accepted.
    int64_t num_drafts = 0;
    int64_t num_draft_tokens = 0;
    int64_t num_accepted_draft_tokens = 0;
    // The late arrival, when there was one.
    double late_ttft_ms = -1;
    double late_max_gap_others_ms = -1;  // the longest inter-token gap of the other requests after it arrived
    EngineCapacity capacity;
};

// Runs the workload to completion on `engine` (which must be idle). A short warm-up request runs first and is not
// counted; the prefix cache is reset after it.
Result<EngineBenchResult> run_engine_bench(Engine& engine, int64_t vocab_size, const EngineBenchOptions& options);

std::string format_engine_bench(const EngineBenchResult& result);
nlohmann::json engine_bench_json(const EngineBenchResult& result);

}  // namespace tern::engine
