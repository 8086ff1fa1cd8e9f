// Facts about the machine and build that ran a benchmark, saved with its results so figures can be traced back.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tern::bench {

// hostname, os, kernel, arch, cpu_model, logical_cpus, memory_gib, compiler.
nlohmann::json machine_facts();

// The git commit tern was built from ("<sha>" or "<sha>-dirty"), or "unknown" outside a git checkout.
std::string build_git_commit();

// Local time in ISO 8601 with the UTC offset, e.g. "2025-11-29T15:27:18+0100".
std::string local_timestamp();

}  // namespace tern::bench
