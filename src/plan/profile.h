// A measured serving profile (the JSON `tern bench serve --save-result` writes) that calibrates the planner's
// throughput model. The schema read here is deliberately small; see docs/plan.md.
//
//   profile := RESULT | [RESULT, ...] | {"results": [RESULT, ...]}      ("runs" is accepted for "results")
//   RESULT  := {
//     "concurrency": C,                      requests in flight (alias: "max_concurrency")
//     "output_tokens_per_s": X,              generated tokens per second, all requests (alias: "output_throughput")
//     "ttft_ms": T | {"mean": .., "p50": .., "p90": .., "p95": .., "p99": ..},   optional
//     "tpot_ms": T | {...same keys...},      optional; time per output token after the first
//     "input_tokens_mean": N,                optional; mean prompt length of the run
//     "output_tokens_mean": N                optional; mean output length of the run
//   }
// vLLM's flat benchmark keys are read as well: mean_ttft_ms / median_ttft_ms / p99_ttft_ms (and the tpot ones),
// and total_input_tokens / total_output_tokens divided by completed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tern::plan {

struct LatencySummary {
    std::optional<double> mean, p50, p90, p95, p99;  // milliseconds

    bool empty() const { return !mean && !p50 && !p90 && !p95 && !p99; }
    // The mean when known, else the median, else nothing.
    std::optional<double> typical() const { return mean ? mean : p50; }
};

struct ProfilePoint {
    double concurrency = 0;
    double output_tokens_per_s = 0;
    LatencySummary ttft_ms;
    LatencySummary tpot_ms;
    std::optional<double> input_tokens_mean;
    std::optional<double> output_tokens_mean;
};

Result<std::vector<ProfilePoint>> read_profile(const std::string& path);
// Parses profile JSON text; `label` names it in errors.
Result<std::vector<ProfilePoint>> parse_profile(const std::string& text, const std::string& label);

}  // namespace tern::plan
