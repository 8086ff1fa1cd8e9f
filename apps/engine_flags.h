// The engine's flags, shared by `tern bench engine` and `tern serve`: KV cache size and type, prefix caching and
// the scheduler's limits, named as vLLM names them where it has the same knob.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "base/status.h"
#include "engine/engine.h"
#include "engine/engine_config.h"

namespace tern::apps {

struct EngineFlags {
    double kv_cache_mem_gib = 0.0;  // 0 = the default share of available memory
    std::string kv_cache_type = "f16";
    bool no_prefix_cache = false;
    bool disable_hybrid_kv = false;
    std::string scheduling_policy = "fcfs";
    // A number, or "auto": sized at start from the measured prefill speed and target_itl_ms (engine/step_budget.h).
    // As vLLM's defaults depend on the use, an online server defaults to auto and an offline benchmark to 2048.
    std::string max_batched_tokens = "auto";
    double target_itl_ms = 250.0;
    const CLI::Option* max_running_option = nullptr;  // to tell a --max-running given from the default
    bool spec_ngram = false;  // speculative decoding with prompt-lookup drafts
    std::string draft_model;  // speculative decoding with a draft model: its GGUF file
    engine::EngineConfig config;
};

void add_engine_flags(CLI::App* command, EngineFlags* flags);

// The EngineConfig the flags describe; errors name the flag. With an auto step budget the engine is created with the
// largest (2048) and lowered once the speed is known.
Result<engine::EngineConfig> engine_config_from_flags(const EngineFlags& flags);

// The draft model the flags name (--draft-model), loaded for `config`'s context; nullptr when none.
Result<std::unique_ptr<Model>> load_draft_model(const EngineFlags& flags, const engine::EngineConfig& config);

// Sizes the step budget of `engine` when the flags ask for auto and logs what it chose. True when its prefill probes
// ran, which warmed the engine up as a first request would (a caller then needs no warm-up of its own).
Result<bool> apply_step_budget(const EngineFlags& flags, engine::Engine& engine);

}  // namespace tern::apps
