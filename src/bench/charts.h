// The report charts of a benchmark, drawn with svg_chart: TTFT and TPOT distributions (a histogram for one run,
// cumulative curves for a sweep), output throughput against concurrency, and latency against throughput.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "bench/result.h"
#include "bench/svg_chart.h"

namespace tern::bench {

enum class LatencyMetric { kTtft, kTpot };

ChartSpec latency_distribution_chart(const std::vector<RunPoint>& runs, LatencyMetric metric);
ChartSpec throughput_vs_concurrency_chart(const std::vector<RunPoint>& runs);
ChartSpec latency_vs_throughput_chart(const std::vector<RunPoint>& runs);

// Histogram of `values` in `num_bins` equal bins from min to max.
BarSeries histogram(const std::vector<double>& values, int num_bins, std::string name);

// A short name for a run of a sweep: "concurrency 4", "rate 2/s" or "run".
std::string run_label(const RunPoint& run);

// Writes ttft.svg, tpot.svg, throughput_vs_concurrency.svg and latency_vs_throughput.svg into `dir` (created if
// missing) and returns their paths.
Result<std::vector<std::string>> write_charts(const std::vector<RunPoint>& runs, const std::string& dir);

}  // namespace tern::bench
