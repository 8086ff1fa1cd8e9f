// A finished benchmark: one RunPoint per load setting (one, or one per sweep value), with its records and summary,
// plus what is needed to reproduce and compare it. Saved as JSON whose per-run keys are those of vLLM's result file
// (completed, request_throughput, mean_ttft_ms, p99_tpot_ms, ttfts, itls, latencies, ...), so either tool's files
// can be compared.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/load_runner.h"
#include "bench/metrics.h"

namespace tern::bench {

struct RunPoint {
    double request_rate = 0;      // configured (inf allowed)
    double burstiness = 1;
    int64_t max_concurrency = 0;  // 0: none
    LoadResult load;
    Summary summary;
    nlohmann::json server_metrics;  // histogram deltas from the server's /metrics (--server-metrics), else null
};

struct BenchResult {
    std::string label;
    std::string date;        // ISO 8601, local time with offset
    std::string git_commit;  // of the tern that ran the benchmark
    nlohmann::json config;   // BenchConfig as JSON, plus the resolved model
    nlohmann::json machine;  // the client machine's facts
    nlohmann::json metadata = nlohmann::json::object();
    std::vector<RunPoint> runs;
};

// One run in vLLM's flat shape (summary figures and per-request arrays) plus errors_by_kind, timeline and client cost.
nlohmann::json run_to_json(const RunPoint& run);
nlohmann::json to_json(const BenchResult& result);

// Writes `result` to `path` (pretty-printed). kInvalidArgument if the file cannot be written.
Status save_result(const BenchResult& result, const std::string& path);

// Reads a result file for comparison: tern's {"runs": [...]} or a vLLM result (one flat run). Returns the runs.
Result<std::vector<nlohmann::json>> load_runs(const std::string& path);

}  // namespace tern::bench
