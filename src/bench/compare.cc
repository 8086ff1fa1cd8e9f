#include "bench/compare.h"

#include <fmt/format.h>

#include <cmath>

#include "bench/stats.h"

namespace tern::bench {
namespace {

using Json = nlohmann::json;

struct Figure {
    const char* key;
    bool higher_is_better;
    const char* samples;  // per-request metric whose mean this figure is, or nullptr
};

constexpr Figure kFigures[] = {
    {"request_throughput", true, nullptr},  {"output_throughput", true, nullptr},
    {"total_token_throughput", true, nullptr}, {"request_goodput", true, nullptr},
    {"mean_ttft_ms", false, "ttft"},        {"median_ttft_ms", false, nullptr},
    {"p99_ttft_ms", false, nullptr},        {"mean_tpot_ms", false, "tpot"},
    {"median_tpot_ms", false, nullptr},     {"p99_tpot_ms", false, nullptr},
    {"mean_itl_ms", false, "itl"},          {"median_itl_ms", false, nullptr},
    {"p99_itl_ms", false, nullptr},         {"mean_e2el_ms", false, "e2el"},
    {"median_e2el_ms", false, nullptr},     {"p99_e2el_ms", false, nullptr},
};

bool is_success(const Json& run, size_t idx) {
    if (!run.contains("errors") || !run["errors"].is_array() || idx >= run["errors"].size()) return true;
    const Json& error = run["errors"][idx];
    return error.is_null() || (error.is_string() && error.get_ref<const std::string&>().empty());
}

double number_at(const Json& array, size_t idx) {
    return idx < array.size() && array[idx].is_number() ? array[idx].get<double>() : 0.0;
}

// Per-request samples in ms for "ttft", "tpot", "itl" or "e2el", from vLLM-style arrays (seconds).
std::vector<double> samples_of(const Json& run, const std::string& metric) {
    std::vector<double> out;
    auto array = [&](const char* key) -> const Json* {
        return run.contains(key) && run[key].is_array() ? &run[key] : nullptr;
    };
    const Json* ttfts = array("ttfts");
    const Json* latencies = array("latencies");
    const Json* itls = array("itls");
    const Json* output_lens = array("output_lens");
    if (ttfts == nullptr || latencies == nullptr) return out;
    for (size_t idx = 0; idx < ttfts->size(); ++idx) {
        if (!is_success(run, idx)) continue;
        const double ttft = number_at(*ttfts, idx);
        const double latency = number_at(*latencies, idx);
        if (metric == "ttft") out.push_back(ttft * 1000);
        if (metric == "e2el") out.push_back(latency * 1000);
        if (metric == "tpot" && output_lens != nullptr) {
            const double tokens = number_at(*output_lens, idx);
            if (tokens > 1) out.push_back((latency - ttft) / (tokens - 1) * 1000);
        }
        if (metric == "itl" && itls != nullptr && idx < itls->size() && (*itls)[idx].is_array()) {
            for (const Json& gap : (*itls)[idx]) {
                if (gap.is_number()) out.push_back(gap.get<double>() * 1000);
            }
        }
    }
    return out;
}

std::string run_name(const Json& run, size_t idx) {
    std::string name = fmt::format("run {}", idx + 1);
    if (run.contains("max_concurrency") && run["max_concurrency"].is_number()) {
        name += fmt::format(" (max concurrency {})", run["max_concurrency"].get<int64_t>());
    } else if (run.contains("request_rate") && run["request_rate"].is_number()) {
        name += fmt::format(" (request rate {:g}/s)", run["request_rate"].get<double>());
    }
    return name;
}

FigureChange compare_figure(const Figure& figure, const Json& a, const Json& b, const CompareOptions& options) {
    FigureChange change;
    change.figure = figure.key;
    change.a = a[figure.key].get<double>();
    change.b = b[figure.key].get<double>();
    change.change_pct = change.a != 0 ? (change.b - change.a) / std::fabs(change.a) * 100.0 : 0.0;
    bool significant = std::fabs(change.change_pct) > options.threshold_pct;
    if (figure.samples != nullptr) {
        const std::vector<double> samples_a = samples_of(a, figure.samples);
        const std::vector<double> samples_b = samples_of(b, figure.samples);
        if (samples_a.size() >= 2 && samples_b.size() >= 2) {
            const WelchResult welch = welch_t(samples_a, samples_b);
            change.p_value = welch.degrees_of_freedom > 0 ? student_t_two_sided_p(welch.t, welch.degrees_of_freedom)
                                                          : 1.0;
            significant = significant && *change.p_value < options.alpha;
        }
    }
    if (significant) {
        const bool went_up = change.b > change.a;
        change.verdict = went_up == figure.higher_is_better ? Verdict::kBetter : Verdict::kWorse;
    }
    return change;
}

}  // namespace

Result<std::vector<RunComparison>> compare_runs(const std::vector<nlohmann::json>& a,
                                                const std::vector<nlohmann::json>& b, const CompareOptions& options) {
    if (a.size() != b.size()) {
        return invalid_argument(fmt::format("the files hold {} and {} runs; compare results of the same sweep",
                                            a.size(), b.size()));
    }
    std::vector<RunComparison> comparisons;
    for (size_t run_idx = 0; run_idx < a.size(); ++run_idx) {
        RunComparison comparison;
        comparison.name = run_name(a[run_idx], run_idx);
        for (const Figure& figure : kFigures) {
            const Json& run_a = a[run_idx];
            const Json& run_b = b[run_idx];
            if (!run_a.contains(figure.key) || !run_b.contains(figure.key)) continue;
            if (!run_a[figure.key].is_number() || !run_b[figure.key].is_number()) continue;
            comparison.changes.push_back(compare_figure(figure, run_a, run_b, options));
        }
        comparisons.push_back(std::move(comparison));
    }
    return comparisons;
}

std::string format_comparison(const std::vector<RunComparison>& comparisons, const CompareOptions& options) {
    std::string out;
    for (const RunComparison& comparison : comparisons) {
        out += fmt::format("## {}\n\n", comparison.name);
        out += "| figure | A | B | change | p (Welch) | verdict |\n| --- | ---: | ---: | ---: | ---: | --- |\n";
        for (const FigureChange& change : comparison.changes) {
            const char* verdict = change.verdict == Verdict::kBetter  ? "better"
                                  : change.verdict == Verdict::kWorse ? "worse"
                                                                      : "within noise";
            out += fmt::format("| {} | {:.2f} | {:.2f} | {:+.1f}% | {} | {} |\n", change.figure, change.a, change.b,
                               change.change_pct, change.p_value ? fmt::format("{:.3f}", *change.p_value) : "",
                               verdict);
        }
        out += "\n";
    }
    out += fmt::format("A change counts when it exceeds {:g}% and, for means, Welch's test gives p < {:g}.\n",
                       options.threshold_pct, options.alpha);
    return out;
}

bool has_regression(const std::vector<RunComparison>& comparisons) {
    for (const RunComparison& comparison : comparisons) {
        for (const FigureChange& change : comparison.changes) {
            if (change.verdict == Verdict::kWorse) return true;
        }
    }
    return false;
}

}  // namespace tern::bench
