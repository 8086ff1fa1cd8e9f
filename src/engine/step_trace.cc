#include "engine/step_trace.h"

#include "trace/trace.h"

namespace tern::engine {

void trace_request_life(int64_t id, const RequestTimings& timings) {
    if (trace::active() == nullptr) return;
    const auto key = static_cast<uint64_t>(id);
    const Clock::time_point first_token = timings.token_times.empty() ? timings.finish : timings.token_times.front();
    trace::request_interval(key, "queued", timings.arrival, timings.first_scheduled);
    trace::request_interval(key, "prefill", timings.first_scheduled, first_token,
                            {trace::Arg{"prompt_tokens", timings.num_prompt_tokens},
                             trace::Arg{"cached_tokens", timings.num_cached_prompt_tokens}});
    if (!timings.token_times.empty()) trace::request_interval(key, "decode", first_token, timings.finish);
    trace::request_instant(key, "finish", timings.finish,
                           {trace::Arg{"output_tokens", static_cast<int64_t>(timings.token_times.size())},
                            trace::Arg{"preemptions", timings.num_preemptions}});
}

void trace_prefill_chunks(const scheduler::StepPlan& plan, const scheduler::Scheduler& scheduler, Clock::time_point begin,
                          Clock::time_point end) {
    if (trace::active() == nullptr) return;
    for (const scheduler::ScheduledRequest& scheduled : plan.requests) {
        const scheduler::Request* request = scheduler.find(scheduled.id);
        if (request == nullptr || scheduled.start >= request->num_prompt_tokens()) continue;
        trace::request_interval(static_cast<uint64_t>(scheduled.id), "prefill chunk", begin, end,
                                {trace::Arg{"start", scheduled.start}, trace::Arg{"tokens", scheduled.num_tokens}});
    }
}

}  // namespace tern::engine
