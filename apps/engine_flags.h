// The engine's flags, shared by `tern bench engine` and `tern serve`: KV cache size and type, prefix caching and
// the scheduler's limits, named as vLLM names them where it has the same knob.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "base/status.h"
#include "engine/engine_config.h"

namespace tern::apps {

struct EngineFlags {
    double kv_cache_mem_gib = 0.0;  // 0 = the default share of available memory
    std::string kv_cache_type = "f16";
    bool no_prefix_cache = false;
    bool disable_hybrid_kv = false;
    std::string scheduling_policy = "fcfs";
    engine::EngineConfig config;
};

void add_engine_flags(CLI::App* command, EngineFlags* flags);

// The EngineConfig the flags describe; errors name the flag.
Result<engine::EngineConfig> engine_config_from_flags(const EngineFlags& flags);

}  // namespace tern::apps
