// `tern bench compare A.json B.json`: the change of each headline figure from A to B, and whether it is beyond
// run-to-run noise. A change counts when it exceeds the threshold (percent) and, for means that both files have
// per-request samples for, when Welch's t-test also rejects "same mean" at 5%.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tern::bench {

enum class Verdict { kNoise, kBetter, kWorse };

struct FigureChange {
    std::string figure;             // a result key, e.g. "mean_ttft_ms"
    double a = 0;
    double b = 0;
    double change_pct = 0;          // (b - a) / a * 100; 0 when a == 0
    std::optional<double> p_value;  // Welch's test on the per-request samples, for means
    Verdict verdict = Verdict::kNoise;
};

struct RunComparison {
    std::string name;  // "run 1 (max concurrency 4)"
    std::vector<FigureChange> changes;
};

struct CompareOptions {
    double threshold_pct = 5.0;
    double alpha = 0.05;
};

// Compares runs pairwise (A's run i with B's run i); the files must hold the same number of runs.
Result<std::vector<RunComparison>> compare_runs(const std::vector<nlohmann::json>& a,
                                                const std::vector<nlohmann::json>& b, const CompareOptions& options);

// A Markdown table per run.
std::string format_comparison(const std::vector<RunComparison>& comparisons, const CompareOptions& options);

bool has_regression(const std::vector<RunComparison>& comparisons);

}  // namespace tern::bench
