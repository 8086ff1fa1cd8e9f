// What the engine writes to a step trace (trace/trace.h) besides its spans: each request's life on its own track
// (queued, prefill, decode, finish) once it ends, and the prefill chunks of each step as they run.
#pragma once

#include <cstdint>

#include "engine/request_timings.h"
#include "scheduler/scheduler.h"

namespace tern::engine {

void trace_request_life(int64_t id, const RequestTimings& timings);
// The requests of `plan` that computed prompt tokens in this step, from `begin` to `end`.
void trace_prefill_chunks(const scheduler::StepPlan& plan, const scheduler::Scheduler& scheduler, Clock::time_point begin,
                          Clock::time_point end);

}  // namespace tern::engine
