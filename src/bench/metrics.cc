#include "bench/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace tern::bench {
namespace {

double end_of(const RequestRecord& record) { return record.start_s + record.e2el_s; }

// The largest number of requests in flight at once, over half-open [start, end) intervals.
int64_t peak_concurrency(const std::vector<RequestRecord>& records) {
    std::vector<std::pair<double, int>> events;
    for (const RequestRecord& record : records) {
        events.emplace_back(record.start_s, +1);
        events.emplace_back(end_of(record), -1);
    }
    std::sort(events.begin(), events.end());
    int64_t current = 0;
    int64_t peak = 0;
    for (const auto& [time, delta] : events) {
        current += delta;
        peak = std::max(peak, current);
    }
    return peak;
}

// Adds `weight` spread uniformly over [from, to) into the buckets.
void add_interval(double from, double to, double weight_per_s, double bucket_s, std::vector<double>* buckets) {
    if (to <= from) return;
    auto first = static_cast<size_t>(std::max(0.0, std::floor(from / bucket_s)));
    for (size_t idx = first; idx < buckets->size(); ++idx) {
        const double lo = std::max(from, static_cast<double>(idx) * bucket_s);
        const double hi = std::min(to, static_cast<double>(idx + 1) * bucket_s);
        if (hi <= lo) break;
        (*buckets)[idx] += weight_per_s * (hi - lo) / bucket_s;
    }
}

bool is_good(const RequestRecord& record, const GoodputSlo& slo) {
    if (slo.ttft_ms && record.ttft_s * 1000 > *slo.ttft_ms) return false;
    if (slo.tpot_ms && record.tpot_s() * 1000 > *slo.tpot_ms) return false;
    if (slo.e2el_ms && record.e2el_s * 1000 > *slo.e2el_ms) return false;
    return true;
}

void collect_latencies(const std::vector<RequestRecord>& records, Summary* summary) {
    std::vector<double> ttft;
    std::vector<double> tpot;
    std::vector<double> itl;
    std::vector<double> e2el;
    std::vector<double> queue;
    for (const RequestRecord& record : records) {
        if (!record.success) continue;
        ttft.push_back(record.ttft_s * 1000);
        if (record.output_tokens > 1) tpot.push_back(record.tpot_s() * 1000);
        for (double gap : record.itl_s) itl.push_back(gap * 1000);
        e2el.push_back(record.e2el_s * 1000);
        queue.push_back(record.queue_s() * 1000);
    }
    summary->ttft_ms = describe(std::move(ttft));
    summary->tpot_ms = describe(std::move(tpot));
    summary->itl_ms = describe(std::move(itl));
    summary->e2el_ms = describe(std::move(e2el));
    summary->queue_ms = describe(std::move(queue));
}

}  // namespace

Result<GoodputSlo> parse_goodput(const std::vector<std::string>& items) {
    GoodputSlo slo;
    for (const std::string& item : items) {
        const size_t colon = item.find(':');
        const std::string key = item.substr(0, colon);
        double value = -1;
        if (colon != std::string::npos) {
            const char* begin = item.data() + colon + 1;
            const auto [end, error] = std::from_chars(begin, item.data() + item.size(), value);
            if (error != std::errc() || end != item.data() + item.size()) value = -1;
        }
        if (colon == std::string::npos || !(value >= 0)) {
            return invalid_argument(fmt::format("--goodput '{}': expected KEY:MS with MS >= 0, e.g. ttft:500", item));
        }
        if (key == "ttft") {
            slo.ttft_ms = value;
        } else if (key == "tpot") {
            slo.tpot_ms = value;
        } else if (key == "e2el") {
            slo.e2el_ms = value;
        } else {
            return invalid_argument(fmt::format("--goodput '{}': the key must be ttft, tpot or e2el", item));
        }
    }
    return slo;
}

Timeline build_timeline(const std::vector<RequestRecord>& records, double duration_s, double bucket_s) {
    Timeline timeline;
    double span = duration_s;
    for (const RequestRecord& record : records) span = std::max(span, end_of(record));
    timeline.bucket_s = bucket_s > 0 ? bucket_s : std::max(0.01, span / 100.0);
    const auto num_buckets = static_cast<size_t>(std::ceil(span / timeline.bucket_s)) + 1;
    timeline.concurrency.assign(num_buckets, 0.0);
    timeline.output_tokens_per_s.assign(num_buckets, 0.0);
    for (const RequestRecord& record : records) {
        add_interval(record.start_s, end_of(record), 1.0, timeline.bucket_s, &timeline.concurrency);
        if (!record.success) continue;
        const double num_chunks = 1.0 + static_cast<double>(record.itl_s.size());
        const double tokens_per_chunk = static_cast<double>(record.output_tokens) / num_chunks;
        double time = record.start_s + record.ttft_s;
        for (size_t chunk_idx = 0; chunk_idx <= record.itl_s.size(); ++chunk_idx) {
            if (chunk_idx > 0) time += record.itl_s[chunk_idx - 1];
            const auto bucket = static_cast<size_t>(std::max(0.0, time / timeline.bucket_s));
            if (bucket < num_buckets) timeline.output_tokens_per_s[bucket] += tokens_per_chunk / timeline.bucket_s;
        }
    }
    return timeline;
}

Summary summarize(const std::vector<RequestRecord>& records, double duration_s, const GoodputSlo& slo,
                  double client_cpu_s) {
    Summary summary;
    summary.duration_s = duration_s;
    for (const RequestRecord& record : records) {
        summary.stale_connection_retries += record.stale_connection_retries;
        if (!record.success) {
            ++summary.failed;
            ++summary.errors_by_kind[std::string(to_string(record.error_kind))];
            continue;
        }
        ++summary.completed;
        summary.total_input_tokens += record.input_tokens;
        summary.total_output_tokens += record.output_tokens;
        summary.output_tokens_from_usage += record.output_tokens_from_usage ? 1 : 0;
        summary.input_tokens_from_usage += record.input_tokens_from_usage ? 1 : 0;
        if (slo.any() && is_good(record, slo)) ++summary.good_requests;
    }
    collect_latencies(records, &summary);
    if (duration_s > 0) {
        summary.request_throughput = static_cast<double>(summary.completed) / duration_s;
        summary.output_throughput = static_cast<double>(summary.total_output_tokens) / duration_s;
        summary.total_token_throughput =
            static_cast<double>(summary.total_input_tokens + summary.total_output_tokens) / duration_s;
        if (slo.any()) summary.request_goodput = static_cast<double>(summary.good_requests) / duration_s;
    }
    summary.max_concurrent_requests = peak_concurrency(records);
    double busy_s = 0;
    for (const RequestRecord& record : records) busy_s += record.e2el_s;
    summary.mean_concurrency = duration_s > 0 ? busy_s / duration_s : 0;
    const Timeline per_second = build_timeline(records, duration_s, 1.0);
    for (double rate : per_second.output_tokens_per_s) {
        summary.max_output_tokens_per_s = std::max(summary.max_output_tokens_per_s, rate);
    }
    summary.timeline = build_timeline(records, duration_s, 0);
    summary.client_cpu_s = client_cpu_s;
    if (client_cpu_s > 0) {
        summary.streamed_tokens_per_cpu_s = static_cast<double>(summary.total_output_tokens) / client_cpu_s;
    }
    return summary;
}

}  // namespace tern::bench
