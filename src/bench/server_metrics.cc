#include "bench/server_metrics.h"

#include <fmt/format.h>

#include <charconv>

namespace tern::bench {
namespace {

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
    return text;
}

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// "name{labels} value [timestamp]" -> name and value.
bool parse_sample(std::string_view line, std::string_view* name, double* value) {
    const size_t name_end = line.find_first_of("{ \t");
    if (name_end == std::string_view::npos) return false;
    *name = line.substr(0, name_end);
    size_t rest = name_end;
    if (line[name_end] == '{') {
        rest = line.find('}', name_end);  // label values may not contain '}' in practice
        if (rest == std::string_view::npos) return false;
        ++rest;
    }
    std::string_view value_text = trim(line.substr(rest));
    value_text = value_text.substr(0, value_text.find_first_of(" \t"));
    const auto [end, error] = std::from_chars(value_text.data(), value_text.data() + value_text.size(), *value);
    return error == std::errc() && end == value_text.data() + value_text.size();
}

}  // namespace

MetricsSnapshot parse_prometheus_histograms(std::string_view text) {
    MetricsSnapshot snapshot;
    size_t start = 0;
    while (start < text.size()) {
        const size_t newline = std::min(text.find('\n', start), text.size());
        const std::string_view line = trim(text.substr(start, newline - start));
        start = newline + 1;
        if (line.empty() || line.front() == '#') continue;
        std::string_view name;
        double value = 0;
        if (!parse_sample(line, &name, &value)) continue;
        if (ends_with(name, "_sum")) {
            snapshot[std::string(name.substr(0, name.size() - 4))].sum += value;
        } else if (ends_with(name, "_count")) {
            snapshot[std::string(name.substr(0, name.size() - 6))].count += value;
        }
    }
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
