#include "bench/charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

namespace tern::bench {
namespace {

std::vector<double> latencies_ms(const RunPoint& run, LatencyMetric metric) {
    std::vector<double> values;
    for (const RequestRecord& record : run.load.records) {
        if (!record.success) continue;
        if (metric == LatencyMetric::kTtft) values.push_back(record.ttft_s * 1000);
        if (metric == LatencyMetric::kTpot && record.output_tokens > 1) values.push_back(record.tpot_s() * 1000);
    }
    return values;
}

LineSeries cumulative(std::vector<double> values, std::string name) {
    std::sort(values.begin(), values.end());
    LineSeries series;
    series.name = std::move(name);
    series.markers = false;
    for (size_t idx = 0; idx < values.size(); ++idx) {
        series.x.push_back(values[idx]);
        series.y.push_back(static_cast<double>(idx + 1) / static_cast<double>(values.size()));
    }
    return series;
}

// Points sorted by x, so the polyline reads left to right.
LineSeries sorted_series(std::vector<std::pair<double, double>> points, std::string name) {
    std::sort(points.begin(), points.end());
    LineSeries series;
    series.name = std::move(name);
    for (const auto& [x, y] : points) {
        series.x.push_back(x);
        series.y.push_back(y);
    }
    return series;
}

}  // namespace

std::string run_label(const RunPoint& run) {
    if (run.max_concurrency > 0) return fmt::format("concurrency {}", run.max_concurrency);
    if (std::isfinite(run.request_rate)) return fmt::format("rate {:g}/s", run.request_rate);
    return "run";
}

BarSeries histogram(const std::vector<double>& values, int num_bins, std::string name) {
    BarSeries series;
    series.name = std::move(name);
    if (values.empty() || num_bins < 1) return series;
    const auto [min_it, max_it] = std::minmax_element(values.begin(), values.end());
    double lo = *min_it;
    double hi = *max_it;
    if (hi - lo < 1e-9) {
        lo -= 0.5;
        hi += 0.5;
    }
    const double width = (hi - lo) / num_bins;
    for (int bin = 0; bin <= num_bins; ++bin) series.edges.push_back(lo + width * bin);
    series.heights.assign(static_cast<size_t>(num_bins), 0.0);
    for (double value : values) {
        const int bin = std::clamp(static_cast<int>((value - lo) / width), 0, num_bins - 1);
        series.heights[static_cast<size_t>(bin)] += 1;
    }
    return series;
}

ChartSpec latency_distribution_chart(const std::vector<RunPoint>& runs, LatencyMetric metric) {
    const char* name = metric == LatencyMetric::kTtft ? "TTFT" : "TPOT";
    ChartSpec chart;
    chart.x_label = fmt::format("{} (ms)", name);
    if (runs.size() == 1) {
        chart.title = fmt::format("{} distribution", name);
        chart.y_label = "requests";
        chart.bars.push_back(histogram(latencies_ms(runs.front(), metric), 30, run_label(runs.front())));
        return chart;
    }
    chart.title = fmt::format("{} distribution (cumulative)", name);
    chart.y_label = "fraction of requests";
    for (const RunPoint& run : runs) chart.lines.push_back(cumulative(latencies_ms(run, metric), run_label(run)));
    return chart;
}

ChartSpec throughput_vs_concurrency_chart(const std::vector<RunPoint>& runs) {
    ChartSpec chart;
    chart.title = "Output throughput vs concurrency";
    chart.x_label = "concurrency (mean requests in flight)";
    chart.y_label = "output throughput (tokens/s)";
    std::vector<std::pair<double, double>> points;
    for (const RunPoint& run : runs) points.emplace_back(run.summary.mean_concurrency, run.summary.output_throughput);
    chart.lines.push_back(sorted_series(std::move(points), "output tokens/s"));
    return chart;
}

ChartSpec latency_vs_throughput_chart(const std::vector<RunPoint>& runs) {
    ChartSpec chart;
    chart.title = "Latency vs throughput";
    chart.x_label = "output throughput (tokens/s)";
    chart.y_label = "latency (ms)";
    std::vector<std::pair<double, double>> mean_ttft, p99_ttft, mean_tpot, p99_tpot;
    for (const RunPoint& run : runs) {
        const double x = run.summary.output_throughput;
        mean_ttft.emplace_back(x, run.summary.ttft_ms.mean);
        p99_ttft.emplace_back(x, run.summary.ttft_ms.p99);
        mean_tpot.emplace_back(x, run.summary.tpot_ms.mean);
        p99_tpot.emplace_back(x, run.summary.tpot_ms.p99);
    }
    chart.lines.push_back(sorted_series(std::move(mean_ttft), "mean TTFT"));
    chart.lines.push_back(sorted_series(std::move(p99_ttft), "p99 TTFT"));
    chart.lines.push_back(sorted_series(std::move(mean_tpot), "mean TPOT"));
    chart.lines.push_back(sorted_series(std::move(p99_tpot), "p99 TPOT"));
    return chart;
}

Result<std::vector<std::string>> write_charts(const std::vector<RunPoint>& runs, const std::string& dir) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) return invalid_argument(fmt::format("cannot create the chart folder '{}': {}", dir, error.message()));
    const std::pair<const char*, ChartSpec> charts[] = {
        {"ttft.svg", latency_distribution_chart(runs, LatencyMetric::kTtft)},
        {"tpot.svg", latency_distribution_chart(runs, LatencyMetric::kTpot)},
        {"throughput_vs_concurrency.svg", throughput_vs_concurrency_chart(runs)},
        {"latency_vs_throughput.svg", latency_vs_throughput_chart(runs)},
    };
    std::vector<std::string> paths;
    for (const auto& [file_name, chart] : charts) {
        const std::string path = (std::filesystem::path(dir) / file_name).string();
        std::ofstream file(path);
        file << render_svg(chart);
        if (!file) return invalid_argument(fmt::format("cannot write the chart '{}'", path));
        paths.push_back(path);
    }
    return paths;
}

}  // namespace tern::bench
