// The console report of `tern bench serve`, as Markdown: vLLM's "Serving Benchmark Result" figures in a table, a
// latency table (mean, median, p90, p95, p99, max), errors by kind, and for sweeps one row per run.
#pragma once

#include <string>
#include <vector>

#include "bench/result.h"

namespace tern::bench {

std::string format_run_report(const RunPoint& run, const std::string& title);

// One row per run: the swept setting, throughput, latencies, goodput and failures.
std::string format_sweep_table(const std::vector<RunPoint>& runs);

}  // namespace tern::bench
