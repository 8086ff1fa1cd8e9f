#include "engine_bench/engine_bench.h"

#include <algorithm>
#include <thread>
#include <unordered_map>

namespace tern::engine {
namespace {

double ms(double seconds) { return seconds * 1000.0; }

struct RunState {
    std::vector<RequestTimings> finished;  // of the workload's requests
    std::optional<RequestTimings> late;
    Clock::time_point late_arrival;
    bool late_added = false;
    int in_flight = 0;
};

Status add(Engine& engine, RequestId id, std::vector<int32_t> prompt, int64_t output_len) {
    EngineRequest request{.id = id, .prompt = std::move(prompt), .max_tokens = static_cast<int>(output_len)};
    request.sampling.temperature = 0.0f;
    return engine.add_request(std::move(request));
}

Status warm_up(Engine& engine) {
    TERN_RETURN_IF_ERROR(add(engine, -1, std::vector<int32_t>(8, 1), 2));
    while (engine.has_unfinished_requests()) TERN_RETURN_IF_ERROR(engine.step().status());
    engine.reset_prefix_cache();
    return Status::ok();
}

// One engine step; records finishes and the KV peaks.
Status step_once(Engine& engine, RequestId late_id, RunState& run, EngineBenchResult& result) {
    TERN_ASSIGN_OR_RETURN(std::vector<RequestOutput> outputs, engine.step());
    const EngineStats stats = engine.stats();
    if (stats.kv_token_capacity > 0) {
        result.peak_kv_fill = std::max(result.peak_kv_fill,
                                       static_cast<double>(stats.kv_live_tokens) / stats.kv_token_capacity);
    }
    result.peak_kv_usage = std::max(result.peak_kv_usage, stats.kv_usage);
    for (RequestOutput& output : outputs) {
        if (!output.finish_reason) continue;
        if (output.id == late_id) {
            run.late = std::move(*output.timings);
            continue;
        }
        run.finished.push_back(std::move(*output.timings));
        --run.in_flight;
    }
    return Status::ok();
}

void summarize(const RunState& run, EngineBenchResult& result) {
    std::vector<double> ttft, tpot, itl, queue, e2e;
    double late_max_gap = 0.0;
    for (const RequestTimings& timings : run.finished) {
        ttft.push_back(ms(timings.ttft_seconds()));
        if (timings.token_times.size() > 1) tpot.push_back(ms(timings.tpot_seconds()));
        for (double gap : timings.inter_token_seconds()) itl.push_back(ms(gap));
        queue.push_back(ms(timings.queue_seconds()));
        e2e.push_back(ms(timings.e2e_seconds()));
        result.input_tokens += timings.num_prompt_tokens;
        result.output_tokens += static_cast<int64_t>(timings.token_times.size());
        for (size_t idx = 1; run.late && idx < timings.token_times.size(); ++idx) {
            if (timings.token_times[idx] <= run.late_arrival) continue;
            const double gap = std::chrono::duration<double>(timings.token_times[idx] - timings.token_times[idx - 1]).count();
            late_max_gap = std::max(late_max_gap, ms(gap));
        }
    }
    result.num_requests = static_cast<int64_t>(run.finished.size());
    result.ttft_ms = bench::describe(ttft);
    result.tpot_ms = bench::describe(tpot);
    result.itl_ms = bench::describe(itl);
    result.queue_ms = bench::describe(queue);
    result.e2e_ms = bench::describe(e2e);
    if (run.late) {
        result.late_ttft_ms = ms(run.late->ttft_seconds());
        result.late_max_gap_others_ms = late_max_gap;
    }
    result.requests_per_s = result.num_requests / result.duration_s;
    result.output_tokens_per_s = result.output_tokens / result.duration_s;
    result.total_tokens_per_s = (result.input_tokens + result.output_tokens) / result.duration_s;
}

}  // namespace

Result<EngineBenchResult> run_engine_bench(Engine& engine, int64_t vocab_size, const EngineBenchOptions& options) {
    if (engine.has_unfinished_requests()) return invalid_argument("the engine must be idle");
    bench::WorkloadOptions workload = options.workload;
    workload.prompt_kind = bench::PromptKind::kTokenIds;
    workload.vocab_size = vocab_size;
    TERN_ASSIGN_OR_RETURN(std::vector<bench::RequestSpec> specs, bench::build_workload(workload));
    TERN_RETURN_IF_ERROR(warm_up(engine));
    const EngineStats before = engine.stats();

    EngineBenchResult result;
    result.capacity = engine.capacity();
    RunState run;
    const RequestId late_id = static_cast<RequestId>(specs.size());
    bool late_pending = options.late_prompt_len > 0;
    size_t next = 0;
    const Clock::time_point start = Clock::now();
    // The late request counts too: with a small budget it can finish after all the others.
    while (next < specs.size() || run.in_flight > 0 || late_pending || (run.late_added && !run.late)) {
        while (next < specs.size() && (options.max_concurrency <= 0 || run.in_flight < options.max_concurrency)) {
            const Status added = add(engine, static_cast<RequestId>(next), specs[next].prompt_token_ids,
                                     specs[next].output_len);
            if (added.code() == StatusCode::kResourceExhausted) break;  // the waiting queue is full: retry later
            TERN_RETURN_IF_ERROR(added);
            ++next;
            ++run.in_flight;
        }
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        if (late_pending && elapsed >= options.late_prompt_after_s) {
            std::vector<int32_t> prompt(static_cast<size_t>(options.late_prompt_len));
            const int64_t first = bench::first_random_token_id(vocab_size);
            for (size_t idx = 0; idx < prompt.size(); ++idx) {
                prompt[idx] = static_cast<int32_t>(first + static_cast<int64_t>(idx * 7919) % (vocab_size - first));
            }
            TERN_RETURN_IF_ERROR(add(engine, late_id, std::move(prompt), options.late_output_len));
            run.late_arrival = Clock::now();
            run.late_added = true;
            late_pending = false;
        }
        if (!engine.has_unfinished_requests()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));  // only the late arrival is left to wait for
            continue;
        }
        TERN_RETURN_IF_ERROR(step_once(engine, late_id, run, result));
    }
    result.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
    const EngineStats after = engine.stats();
    result.num_steps = after.num_steps - before.num_steps;
    result.num_preemptions = after.num_preemptions - before.num_preemptions;
    const int64_t queried = after.prefix_cache.num_queried_tokens - before.prefix_cache.num_queried_tokens;
    const int64_t hits = after.prefix_cache.num_hit_tokens - before.prefix_cache.num_hit_tokens;
    result.prefix_cache_hit_rate = queried > 0 ? static_cast<double>(hits) / queried : 0.0;
    result.num_drafts = after.num_drafts - before.num_drafts;
    result.num_draft_tokens = after.num_draft_tokens - before.num_draft_tokens;
    result.num_accepted_draft_tokens = after.num_accepted_draft_tokens - before.num_accepted_draft_tokens;
    summarize(run, result);
    return result;
}

}  // namespace tern::engine
