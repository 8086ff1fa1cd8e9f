#include "apps/engine_flags.h"

#include <charconv>
#include <optional>

#include "apps/commands.h"
#include "base/log.h"
#include "engine/step_budget.h"

namespace tern::apps {

void add_engine_flags(CLI::App* command, EngineFlags* flags) {
    engine::EngineConfig& config = flags->config;
    command->add_option("--kv-cache-mem", flags->kv_cache_mem_gib,
                        "KV cache budget in GiB (default: 40% of available memory, capped at max-running full contexts)");
    command->add_option("--kv-cache-type", flags->kv_cache_type, "KV element type: f16, q8_0 or f32")
        ->capture_default_str();
    command->add_option("--block-size", config.block_size, "Tokens per KV block")->capture_default_str();
    command->add_flag("--no-prefix-cache", flags->no_prefix_cache, "Do not reuse the KV of common prompt prefixes");
    command->add_flag("--disable-hybrid-kv-cache-manager", flags->disable_hybrid_kv,
                      "Keep every position of sliding-window layers too (vLLM's flag): one block table per sequence");
    command->add_option("--max-batched-tokens,--max-num-batched-tokens", flags->max_batched_tokens,
                        "Token budget of one step: decodes plus prompt chunks; auto: sized at start so that a full "
                        "step takes about --target-itl-ms on this machine (at most 2048)")->capture_default_str();
    command->add_option("--target-itl-ms", flags->target_itl_ms,
                        "With --max-batched-tokens auto: how long a step may take, the longest gap a streaming "
                        "client should see while prompts are prefilled beside it")
        ->capture_default_str()->check(CLI::Range(1.0, 600000.0));
    flags->max_running_option =
        command->add_option("--max-running,--max-num-seqs", config.max_running,
                            "Most sequences in one step (with an auto step budget, at most that budget)")
            ->capture_default_str();
    command->add_option("--max-queued-requests", config.max_queued_requests,
                        "Waiting requests beyond which new ones are rejected")->capture_default_str();
    command->add_option("--max-queued-tokens", config.max_queued_tokens,
                        "Prompt tokens waiting beyond which new requests are rejected")->capture_default_str();
    command->add_option("--max-model-len", config.max_model_len,
                        "Context length (default: the model's; a LongRoPE model takes its long RoPE factors when "
                        "this exceeds its original context)");
    engine::SpeculativeConfig& spec = config.speculative;
    command->add_flag("--spec-ngram", flags->spec_ngram,
                      "Speculative decoding with prompt-lookup drafts: tokens that followed the last n tokens earlier "
                      "in the sequence are verified several at a time (exact; faster where outputs repeat inputs)");
    command->add_option("--draft-model", flags->draft_model,
                        "Speculative decoding with a draft model: a cheaper model of the same vocabulary (a lower-bit "
                        "quantization of the model, or a smaller one of its family) proposes tokens greedily and the "
                        "model verifies several at a time (exact; its KV takes room in each block)" +
                            std::string(kModelOptionNote))
        ->transform(model_resolver());
    command->add_option("--num-speculative-tokens", spec.num_speculative_tokens,
                        "Drafts verified per request and step (default with --spec-ngram or --draft-model: 4)");
    command->add_option("--spec-ngram-min", spec.ngram.min_n, "Shortest repeated suffix that proposes drafts")
        ->capture_default_str();
    command->add_option("--spec-ngram-max", spec.ngram.max_n, "Longest repeated suffix tried first")
        ->capture_default_str();
    command->add_option("--speculative-disable-by-batch-size", spec.disable_by_batch_size,
                        "No drafts while more requests run (the step is compute-bound then)")
        ->capture_default_str();
    command->add_option("--scheduling-policy", flags->scheduling_policy,
                        "fcfs: arrival order, a request with a non-zero priority is refused; priority: lower "
                        "`priority` first, and it may preempt others when KV memory is short")
        ->capture_default_str();
}

namespace {

Result<int> parse_budget(const std::string& text) {
    int value = 0;
    const char* last = text.data() + text.size();
    const auto [end, error] = std::from_chars(text.data(), last, value);
    if (error != std::errc() || end != last || value < 1) {
        return invalid_argument("--max-batched-tokens must be a number of tokens >= 1 or auto, not '" + text + "'");
    }
    return value;
}

// Set when the step budget is auto: how to size it.
std::optional<engine::StepBudgetOptions> step_budget_options(const EngineFlags& flags) {
    if (flags.max_batched_tokens != "auto") return std::nullopt;
    engine::StepBudgetOptions options;
    options.target_step_ms = flags.target_itl_ms;
    options.max_running = flags.config.max_running;
    options.max_running_explicit = flags.max_running_option != nullptr && flags.max_running_option->count() > 0;
    return options;
}

}  // namespace

Result<engine::EngineConfig> engine_config_from_flags(const EngineFlags& flags) {
    engine::EngineConfig config = flags.config;
    if (flags.max_batched_tokens == "auto") {
        config.max_batched_tokens = engine::StepBudgetOptions{}.max_tokens;
    } else {
        TERN_ASSIGN_OR_RETURN(config.max_batched_tokens, parse_budget(flags.max_batched_tokens));
    }
    if (flags.kv_cache_mem_gib < 0) return invalid_argument("--kv-cache-mem must be >= 0 GiB");
    config.kv_cache_bytes = static_cast<uint64_t>(flags.kv_cache_mem_gib * (1ull << 30));
    TERN_ASSIGN_OR_RETURN(config.kv_type, parse_kv_type(flags.kv_cache_type));
    config.enable_prefix_caching = !flags.no_prefix_cache;
    config.hybrid_kv_cache = !flags.disable_hybrid_kv;
    TERN_ASSIGN_OR_RETURN(config.scheduling_policy, engine::parse_scheduling_policy(flags.scheduling_policy));
    const bool drafts = flags.spec_ngram || !flags.draft_model.empty();
    if (flags.spec_ngram && !flags.draft_model.empty()) {
        return invalid_argument("--spec-ngram and --draft-model are two drafting methods: choose one");
    }
    if (drafts && config.speculative.num_speculative_tokens == 0) config.speculative.num_speculative_tokens = 4;
    if (!drafts && config.speculative.num_speculative_tokens > 0) {
        return invalid_argument("--num-speculative-tokens needs a drafting method: add --spec-ngram or --draft-model");
    }
    if (!flags.draft_model.empty()) config.speculative.method = engine::DraftMethod::kDraftModel;
    TERN_RETURN_IF_ERROR(config.validate());
    return config;
}

Result<std::unique_ptr<Model>> load_draft_model(const EngineFlags& flags, const engine::EngineConfig& config) {
    if (flags.draft_model.empty()) return std::unique_ptr<Model>();
    Result<std::unique_ptr<Model>> loaded = Model::load(flags.draft_model, {.context_length = config.max_model_len});
    if (!loaded.is_ok()) return invalid_argument("--draft-model: " + loaded.status().message());
    log_info("draft model {}: {} layers, {} MiB of weights", flags.draft_model, loaded.value()->hparams().num_layers,
             loaded.value()->stored_weight_bytes() >> 20);
    return loaded;
}

Result<bool> apply_step_budget(const EngineFlags& flags, engine::Engine& engine) {
    const std::optional<engine::StepBudgetOptions> options = step_budget_options(flags);
    if (!options) return false;
    // A probe that cannot run (a queue or pool configured smaller than a probe) keeps the configured budget.
    const Result<engine::StepBudget> measured = engine::measure_step_budget(engine, *options);
    if (!measured.is_ok()) {
        log_warn("could not size the step budget ({}): keeping max batched tokens {}", measured.status().message(),
                 engine.config().max_batched_tokens);
        return false;
    }
    const engine::StepBudget& budget = measured.value();
    TERN_RETURN_IF_ERROR(engine.set_step_limits(budget.max_batched_tokens, budget.max_running));
    log_info("{}", engine::describe(budget, *options));
    return true;
}

}  // namespace tern::apps
