// The server's own view of a run, from its Prometheus /metrics endpoint: every histogram's count and sum are read
// before and after the run, and the difference gives the server-side mean of what the run caused (vLLM's
// vllm:time_to_first_token_seconds, llama.cpp's, tern's). Comparing those means with the client's checks both.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"
#include "net/http_client.h"

namespace tern::bench {

// Histogram totals by metric name (label sets summed): name -> {sum, count}.
struct HistogramTotals {
    double sum = 0;
    double count = 0;
};
using MetricsSnapshot = std::map<std::string, HistogramTotals>;

// Reads the `NAME_sum` and `NAME_count` samples of the Prometheus text exposition format. Comments, other samples
// and malformed lines are skipped.
MetricsSnapshot parse_prometheus_histograms(std::string_view text);

// GETs /metrics; kUnavailable if the server does not answer 200.
Result<MetricsSnapshot> scrape_metrics(net::HttpClient& client);

// What happened between two snapshots: {"NAME": {"count": n, "mean": x}} for histograms that grew.
nlohmann::json histogram_deltas(const MetricsSnapshot& before, const MetricsSnapshot& after);

}  // namespace tern::bench
