#include "apps/engine_flags.h"

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
    command->add_option("--max-batched-tokens,--max-num-batched-tokens", config.max_batched_tokens,
                        "Token budget of one step: decodes plus prompt chunks")->capture_default_str();
    command->add_option("--max-running,--max-num-seqs", config.max_running, "Most sequences in one step")
        ->capture_default_str();
    command->add_option("--max-queued-requests", config.max_queued_requests,
                        "Waiting requests beyond which new ones are rejected")->capture_default_str();
    command->add_option("--max-queued-tokens", config.max_queued_tokens,
                        "Prompt tokens waiting beyond which new requests are rejected")->capture_default_str();
    command->add_option("--max-model-len", config.max_model_len,
                        "Context length (default: the model's; a LongRoPE model takes its long RoPE factors when "
                        "this exceeds its original context)");
    command->add_option("--scheduling-policy", flags->scheduling_policy,
                        "fcfs: arrival order, a request with a non-zero priority is refused; priority: lower "
                        "`priority` first, and it may preempt others when KV memory is short")
        ->capture_default_str();
}

Result<engine::EngineConfig> engine_config_from_flags(const EngineFlags& flags) {
    engine::EngineConfig config = flags.config;
    if (flags.kv_cache_mem_gib < 0) return invalid_argument("--kv-cache-mem must be >= 0 GiB");
    config.kv_cache_bytes = static_cast<uint64_t>(flags.kv_cache_mem_gib * (1ull << 30));
    TERN_ASSIGN_OR_RETURN(config.kv_type, parse_kv_type(flags.kv_cache_type));
    config.enable_prefix_caching = !flags.no_prefix_cache;
    config.hybrid_kv_cache = !flags.disable_hybrid_kv;
    TERN_ASSIGN_OR_RETURN(config.scheduling_policy, engine::parse_scheduling_policy(flags.scheduling_policy));
    TERN_RETURN_IF_ERROR(config.validate());
    return config;
}

}  // namespace tern::apps
