#include "engine/step_budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tern::engine {
namespace {

constexpr int kFirstProbeTokens = 32;
constexpr RequestId kProbeRequestId = -2;  // below any id a server hands out (they count up from 0)

// One request of `num_tokens` prompt tokens and one output token, alone on the engine: the wall time of its steps.
// A salt per probe keeps one probe from reusing another's cached prefix.
Result<PrefillTiming> time_prefill(Engine& engine, int num_tokens, int probe_idx) {
    EngineRequest request;
    request.id = kProbeRequestId;
    request.prompt.resize(static_cast<size_t>(num_tokens));
    for (int idx = 0; idx < num_tokens; ++idx) request.prompt[static_cast<size_t>(idx)] = 1 + idx % 97;
    request.max_tokens = 1;
    request.sampling.temperature = 0.0f;
    request.cache_salt = fmt::format("step-budget-probe-{}", probe_idx);
    TERN_RETURN_IF_ERROR(engine.add_request(std::move(request)));
    const Clock::time_point start = Clock::now();
    while (engine.has_unfinished_requests()) TERN_RETURN_IF_ERROR(engine.step().status());
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    return PrefillTiming{.num_tokens = num_tokens, .ms = ms};
}

int clamp_budget(double tokens, const StepBudgetOptions& options) {
    const double clamped = std::clamp(std::floor(tokens), static_cast<double>(options.min_tokens),
                                      static_cast<double>(options.max_tokens));
    return static_cast<int>(clamped);
}

}  // namespace

StepBudget size_step_budget(const PrefillTiming& measured, const StepBudgetOptions& options) {
    const double ms_per_token = measured.ms / std::max(measured.num_tokens, 1);
    const double tokens = ms_per_token > 0.0 ? options.target_step_ms / ms_per_token : options.max_tokens;
    StepBudget budget{.max_batched_tokens = clamp_budget(tokens, options), .max_running = options.max_running,
                      .measured = measured};
    if (budget.max_running <= budget.max_batched_tokens) return budget;
    if (options.max_running_explicit) {
        budget.max_batched_tokens = std::min(budget.max_running, options.max_tokens);
        budget.target_missed = true;
    } else {
        budget.max_running = budget.max_batched_tokens;
    }
    return budget;
}

Result<StepBudget> measure_step_budget(Engine& engine, const StepBudgetOptions& options) {
    StepBudgetOptions bounded = options;
    bounded.max_tokens = std::min(options.max_tokens, engine.config().max_batched_tokens);
    bounded.min_tokens = std::min(options.min_tokens, bounded.max_tokens);
    // A probe is one request: it must fit the context, the KV pool (a sliding-window model's pool may hold less than
    // its context) and the waiting queue's token limit. The budget may exceed it (several prompts share a step).
    const EngineCapacity& capacity = engine.capacity();
    const int64_t pool_tokens =
        capacity.num_blocks / std::ssize(capacity.group_windows) * capacity.block_size - capacity.block_size;
    const int probe_limit = static_cast<int>(std::min<int64_t>(
        {bounded.max_tokens, capacity.max_model_len - 1, pool_tokens, engine.config().max_queued_tokens}));
    if (probe_limit < 1) return invalid_argument("no prefill probe fits the context, KV pool and queue limits");
    const int first_tokens = std::min(kFirstProbeTokens, probe_limit);
    TERN_RETURN_IF_ERROR(time_prefill(engine, first_tokens, 0).status());
    TERN_ASSIGN_OR_RETURN(PrefillTiming first, time_prefill(engine, first_tokens, 1));
    StepBudget budget = size_step_budget(first, bounded);
    // Per-token time falls with the step's size (the weights are read once a step), so 32 tokens overstate it;
    // the budget comes from a step near the size it will have.
    const int second_tokens = std::min(budget.max_batched_tokens, probe_limit);
    if (second_tokens > first_tokens * 3 / 2) {
        TERN_ASSIGN_OR_RETURN(PrefillTiming second, time_prefill(engine, second_tokens, 2));
        budget = size_step_budget(second, bounded);
    }
    engine.reset_prefix_cache();
    return budget;
}

std::string describe(const StepBudget& budget, const StepBudgetOptions& options) {
    std::string line = fmt::format("max batched tokens {} (sized: a {}-token prefill took {:.1f} ms, target {:g} ms)",
                                   budget.max_batched_tokens, budget.measured.num_tokens, budget.measured.ms,
                                   options.target_step_ms);
    if (budget.target_missed) {
        line += fmt::format(", raised to --max-running {}: each running sequence needs a token of every step",
                            budget.max_running);
    } else if (budget.max_running < options.max_running) {
        line += fmt::format(", max running {}: each running sequence needs a token of every step", budget.max_running);
    }
    return line;
}

}  // namespace tern::engine
