#include "metrics/registry.h"

#include <cmath>

#include <fmt/format.h>

#include "metrics/text_format.h"

namespace tern::metrics {
namespace {

std::vector<std::string> series_names_of(const std::string& name, MetricType type) {
    if (type != MetricType::kHistogram) return {name};
    return {name, name + "_bucket", name + "_sum", name + "_count"};
}

Status check_bounds(const std::string& name, const std::vector<double>& bounds) {
    for (size_t bound_idx = 0; bound_idx < bounds.size(); ++bound_idx) {
        if (!std::isfinite(bounds[bound_idx])) {
            return invalid_argument(fmt::format("histogram {}: bucket bound {} is not finite (+Inf is implicit)",
                                                name, bounds[bound_idx]));
        }
        if (bound_idx > 0 && !(bounds[bound_idx - 1] < bounds[bound_idx])) {
            return invalid_argument(fmt::format("histogram {}: bucket bounds must increase strictly, got {} then {}",
                                                name, bounds[bound_idx - 1], bounds[bound_idx]));
        }
    }
    return Status::ok();
}

}  // namespace

Status Registry::reserve(const std::string& name, MetricType type, const std::vector<std::string>& label_names) {
    if (!is_valid_metric_name(name)) {
        return invalid_argument(fmt::format("invalid metric name '{}': use [a-zA-Z_:][a-zA-Z0-9_:]*", name));
    }
    std::set<std::string> seen_labels;
    for (const std::string& label_name : label_names) {
        if (!is_valid_label_name(label_name)) {
            return invalid_argument(fmt::format(
                "metric {}: invalid label name '{}': use [a-zA-Z_][a-zA-Z0-9_]*, not starting with __", name,
                label_name));
        }
        if (type == MetricType::kHistogram && label_name == "le") {
            return invalid_argument(fmt::format("histogram {}: the label name 'le' is reserved for buckets", name));
        }
        if (!seen_labels.insert(label_name).second) {
            return invalid_argument(fmt::format("metric {}: label name '{}' given twice", name, label_name));
        }
    }
    std::vector<std::string> new_series = series_names_of(name, type);
    for (const std::string& series : new_series) {
        if (series_names_.contains(series)) {
            return invalid_argument(fmt::format("metric {}: the name '{}' is already registered", name, series));
        }
    }
    series_names_.insert(new_series.begin(), new_series.end());
    return Status::ok();
}

template <typename T>
Family<T>* Registry::insert(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
                            typename Family<T>::Factory make) {
    auto family = std::make_unique<Family<T>>(name, std::move(help), type, std::move(label_names), std::move(make));
    Family<T>* raw = family.get();
    if (raw->label_names().empty()) raw->get();  // an unlabelled series exists (as 0) from the start
    families_.emplace(std::move(name), std::move(family));
    return raw;
}

Result<Family<Counter>*> Registry::add_counter(std::string name, std::string help,
                                               std::vector<std::string> label_names) {
    std::lock_guard<std::mutex> lock(mutex_);
    TERN_RETURN_IF_ERROR(reserve(name, MetricType::kCounter, label_names));
    return insert<Counter>(std::move(name), std::move(help), MetricType::kCounter, std::move(label_names),
                           [] { return std::make_unique<Counter>(); });
}

Result<Family<Gauge>*> Registry::add_gauge(std::string name, std::string help, std::vector<std::string> label_names) {
    std::lock_guard<std::mutex> lock(mutex_);
    TERN_RETURN_IF_ERROR(reserve(name, MetricType::kGauge, label_names));
    return insert<Gauge>(std::move(name), std::move(help), MetricType::kGauge, std::move(label_names),
                         [] { return std::make_unique<Gauge>(); });
}

Result<Family<Histogram>*> Registry::add_histogram(std::string name, std::string help, std::vector<double> bounds,
                                                   std::vector<std::string> label_names) {
    std::lock_guard<std::mutex> lock(mutex_);
    TERN_RETURN_IF_ERROR(check_bounds(name, bounds));
    TERN_RETURN_IF_ERROR(reserve(name, MetricType::kHistogram, label_names));
    return insert<Histogram>(std::move(name), std::move(help), MetricType::kHistogram, std::move(label_names),
                             [bounds = std::move(bounds)] { return std::make_unique<Histogram>(bounds); });
}

std::string Registry::render() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    for (const auto& [name, family] : families_) family->render(out);
    return out;
}

}  // namespace tern::metrics
