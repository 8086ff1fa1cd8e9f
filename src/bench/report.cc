#include "bench/report.h"

#include <fmt/format.h>

#include <cmath>

#include "bench/charts.h"

namespace tern::bench {
namespace {

std::string rate_text(double rate) { return std::isfinite(rate) ? fmt::format("{:.2f}", rate) : "inf"; }

std::string latency_row(const char* name, const Distribution& d) {
    return fmt::format("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", name, d.mean, d.median, d.p90,
                       d.p95, d.p99, d.max);
}

std::string first_error(const RunPoint& run) {
    for (const RequestRecord& record : run.load.records) {
        if (!record.success) return fmt::format("{}: {}", to_string(record.error_kind), record.error);
    }
    return "";
}

}  // namespace

std::string format_run_report(const RunPoint& run, const std::string& title) {
    const Summary& s = run.summary;
    std::string out = fmt::format("## {}\n\n| metric | value |\n| --- | ---: |\n", title);
    auto row = [&out](std::string_view name, const std::string& value) {
        out += fmt::format("| {} | {} |\n", name, value);
    };
    row("Successful requests", std::to_string(s.completed));
    row("Failed requests", std::to_string(s.failed));
    if (s.stale_connection_retries > 0) {
        row("Sent again (the server had closed the kept connection)", std::to_string(s.stale_connection_retries));
    }
    row("Maximum request concurrency", run.max_concurrency > 0 ? std::to_string(run.max_concurrency) : "none");
    row("Request rate configured (RPS)", rate_text(run.request_rate));
    row("Benchmark duration (s)", fmt::format("{:.2f}", s.duration_s));
    row("Total input tokens", std::to_string(s.total_input_tokens));
    row("Total generated tokens", std::to_string(s.total_output_tokens));
    row("Request throughput (req/s)", fmt::format("{:.2f}", s.request_throughput));
    if (s.request_goodput) row("Request goodput (req/s)", fmt::format("{:.2f}", *s.request_goodput));
    row("Output token throughput (tok/s)", fmt::format("{:.2f}", s.output_throughput));
    row("Peak output token throughput (tok/s)", fmt::format("{:.2f}", s.max_output_tokens_per_s));
    row("Peak concurrent requests", std::to_string(s.max_concurrent_requests));
    row("Mean concurrent requests", fmt::format("{:.2f}", s.mean_concurrency));
    row("Total token throughput (tok/s)", fmt::format("{:.2f}", s.total_token_throughput));
    row("Output tokens counted from usage", fmt::format("{} of {} requests", s.output_tokens_from_usage, s.completed));
    row("Client CPU (s)", fmt::format("{:.3f} ({:.0f} streamed tok per CPU s)", s.client_cpu_s,
                                      s.streamed_tokens_per_cpu_s));
    out += "\n| latency (ms) | mean | median | p90 | p95 | p99 | max |\n"
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    out += latency_row("TTFT", s.ttft_ms);
    out += latency_row("TPOT", s.tpot_ms);
    out += latency_row("ITL", s.itl_ms);
    out += latency_row("E2EL", s.e2el_ms);
    if (run.max_concurrency > 0 || s.queue_ms.max > 0) out += latency_row("Client queue", s.queue_ms);
    if (run.server_metrics.is_object() && !run.server_metrics.empty()) {
        out += "\n| server histogram (/metrics) | observations | mean |\n| --- | ---: | ---: |\n";
        for (const auto& [name, delta] : run.server_metrics.items()) {
            const double mean = delta.value("mean", 0.0);
            const bool seconds = name.size() > 8 && name.compare(name.size() - 8, 8, "_seconds") == 0;
            out += fmt::format("| {} | {:.0f} | {} |\n", name, delta.value("count", 0.0),
                               seconds ? fmt::format("{:.2f} ms", mean * 1000) : fmt::format("{:.4g}", mean));
        }
    }
    if (!s.errors_by_kind.empty()) {
        out += "\n| error | requests |\n| --- | ---: |\n";
        for (const auto& [kind, count] : s.errors_by_kind) out += fmt::format("| {} | {} |\n", kind, count);
        out += fmt::format("\nFirst error: {}\n", first_error(run));
    }
    return out;
}

std::string format_sweep_table(const std::vector<RunPoint>& runs) {
    std::string out =
        "## Sweep\n\n| run | mean concurrency | req/s | output tok/s | mean TTFT (ms) | p99 TTFT (ms) | "
        "mean TPOT (ms) | p99 TPOT (ms) | mean E2EL (ms) | goodput (req/s) | failed |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const RunPoint& run : runs) {
        const Summary& s = run.summary;
        out += fmt::format("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} | {} |\n",
                           run_label(run), s.mean_concurrency, s.request_throughput, s.output_throughput,
                           s.ttft_ms.mean, s.ttft_ms.p99, s.tpot_ms.mean, s.tpot_ms.p99, s.e2el_ms.mean,
                           s.request_goodput ? fmt::format("{:.2f}", *s.request_goodput) : "-", s.failed);
    }
    return out;
}

}  // namespace tern::bench
