// The traffic a deployment must carry: request lengths (means or percentiles, or a file of real lengths), the peak
// request rate and the latency targets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tern::plan {

// Token counts of one side of a request. When only the mean is known, the percentiles equal it.
struct LengthStats {
    double mean = 0;
    double p50 = 0;
    double p95 = 0;
    double p99 = 0;
};

struct Workload {
    LengthStats input;
    LengthStats output;
    // Percentiles of input + output per request, known when real lengths were given; otherwise the planner adds
    // the input and output percentiles (an upper bound of the true percentile of the sum).
    std::optional<LengthStats> total;
    // Where the lengths came from: "default" (the constants below), "flags", "length file" or "profile" (the
    // measured run's means, used when no lengths are given).
    std::string lengths_source = "default";
    double peak_requests_per_s = 0;  // 0: not given (the plan sizes one replica)
    double slo_ttft_ms = 0;          // 0: no target
    double slo_tpot_ms = 0;          // 0: no target
};

inline constexpr double kDefaultInputTokens = 512;
inline constexpr double kDefaultOutputTokens = 256;

// Nearest-rank percentiles and the mean of `values` (not empty).
LengthStats length_stats(std::vector<double> values);

// A file of real request lengths: one request per line, "INPUT_TOKENS OUTPUT_TOKENS" (spaces, tabs or a comma
// between), '#' starts a comment. Fills input, output and total of `workload`.
Status read_length_file(const std::string& path, Workload* workload);

}  // namespace tern::plan
