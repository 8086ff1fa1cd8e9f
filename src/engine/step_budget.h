// A step's token budget sized from the speed measured on this machine. A step holds every running decode plus prompt
// chunks up to the budget, and each decoding stream waits for the whole step: the budget is the longest gap a stream
// sees while prompts are being prefilled. A fixed default cannot suit every model and CPU: 2048 tokens (vLLM's) is a
// 5-second step for TinyLlama on two cores (a 5.7 s gap under 16 streams, #23), while a small budget wastes a fast
// machine's prefill. So the server times prefill steps at start and picks the budget whose step takes about
// --target-itl-ms.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "engine/engine.h"

namespace tern::engine {

struct StepBudgetOptions {
    double target_step_ms = 250.0;  // how long a step with a full budget should take
    int min_tokens = 32;            // no smaller budget whatever the speed: prefill would crawl
    int max_tokens = 2048;          // nor a larger one (and never above the engine's own)
    int max_running = 256;          // the cap on running sequences configured
    bool max_running_explicit = false;  // the user chose that cap (it then wins over the target, see below)
};

// One timed prefill step: `num_tokens` prompt tokens of one request took `ms`.
struct PrefillTiming {
    int num_tokens = 0;
    double ms = 0.0;
};

struct StepBudget {
    int max_batched_tokens = 0;
    int max_running = 0;
    PrefillTiming measured;  // the timing the budget was sized from
    bool target_missed = false;  // an explicit --max-running above the sized budget raised it
};

// The budget for a step of `options.target_step_ms` given that a prefill of `measured.num_tokens` took `measured.ms`
// (a step's time grows about linearly with its tokens), clamped to [min_tokens, max_tokens]. Every running sequence
// must fit one step's budget or the last admitted ones would starve behind the first, so the cap on running sequences
// is lowered to the budget, unless the user set that cap: then the budget is raised to it.
StepBudget size_step_budget(const PrefillTiming& measured, const StepBudgetOptions& options);

// Times prefill steps on `engine` (idle, nothing queued) and sizes the budget from them: 32 tokens first (twice, the
// first run warms up), then a step of about the size the first suggests (as far as one request may be: the context,
// the KV pool and the queue's token limit bound a probe, not the budget), whose timing decides. Costs about three
// target steps of time. The probes' cached prefixes are dropped afterwards. The engine's limits are not changed.
Result<StepBudget> measure_step_budget(Engine& engine, const StepBudgetOptions& options);

// One line for the start-up log, e.g. "max batched tokens 118 (sized: a 112-token prefill took 237.1 ms, target 250
// ms)".
std::string describe(const StepBudget& budget, const StepBudgetOptions& options);

}  // namespace tern::engine
