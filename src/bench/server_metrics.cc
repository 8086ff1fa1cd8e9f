#include "bench/server_metrics.h"

#include <fmt/format.h>

#include "metrics/text_parse.h"

namespace tern::bench {
namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

MetricsSnapshot parse_prometheus_histograms(std::string_view text) {
    MetricsSnapshot snapshot;
    metrics::for_each_sample(text, [&snapshot](std::string_view name, double value) {
        if (ends_with(name, "_sum")) {
            snapshot[std::string(name.substr(0, name.size() - 4))].sum += value;
        } else if (ends_with(name, "_count")) {
            snapshot[std::string(name.substr(0, name.size() - 6))].count += value;
        }
    });
    return snapshot;
}

Result<MetricsSnapshot> scrape_metrics(net::HttpClient& client) {
    TERN_ASSIGN_OR_RETURN(net::HttpResponse response, client.get("/metrics"));
    if (response.status != 200) {
        return Status(StatusCode::kUnavailable, fmt::format("/metrics answered HTTP {}", response.status));
    }
    return parse_prometheus_histograms(response.body);
}

nlohmann::json histogram_deltas(const MetricsSnapshot& before, const MetricsSnapshot& after) {
    nlohmann::json deltas = nlohmann::json::object();
    for (const auto& [name, totals] : after) {
        HistogramTotals base;
        if (auto found = before.find(name); found != before.end()) base = found->second;
        const double count = totals.count - base.count;
        if (count <= 0) continue;
        deltas[name] = {{"count", count}, {"mean", (totals.sum - base.sum) / count}};
    }
    return deltas;
}

}  // namespace tern::bench
