#include "metrics/family.h"

#include "base/check.h"
#include "metrics/text_format.h"

namespace tern::metrics {
namespace {

const char* type_name(MetricType type) {
    switch (type) {
        case MetricType::kCounter: return "counter";
        case MetricType::kGauge: return "gauge";
        case MetricType::kHistogram: return "histogram";
    }
    return "untyped";
}

void render_child(std::string& out, const FamilyBase& family, const std::vector<std::string>& label_values,
                  const Counter& counter) {
    append_sample(out, family.name(), family.label_names(), label_values, "", counter.value());
}

void render_child(std::string& out, const FamilyBase& family, const std::vector<std::string>& label_values,
                  const Gauge& gauge) {
    append_sample(out, family.name(), family.label_names(), label_values, "", gauge.value());
}

void render_child(std::string& out, const FamilyBase& family, const std::vector<std::string>& label_values,
                  const Histogram& histogram) {
    Histogram::Snapshot snapshot = histogram.snapshot();
    const std::string bucket_name = family.name() + "_bucket";
    for (size_t bound_idx = 0; bound_idx < histogram.bounds().size(); ++bound_idx) {
        append_sample(out, bucket_name, family.label_names(), label_values,
                      format_value(histogram.bounds()[bound_idx]),
                      static_cast<double>(snapshot.cumulative_counts[bound_idx]));
    }
    append_sample(out, bucket_name, family.label_names(), label_values, "+Inf", static_cast<double>(snapshot.count));
    append_sample(out, family.name() + "_sum", family.label_names(), label_values, "", snapshot.sum);
    append_sample(out, family.name() + "_count", family.label_names(), label_values, "",
                  static_cast<double>(snapshot.count));
}

}  // namespace

template <typename T>
T& Family<T>::with_labels(const std::vector<std::string>& label_values) {
    TERN_CHECK(label_values.size() == label_names().size())
        << name() << " takes " << label_names().size() << " label values, got " << label_values.size();
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, inserted] = children_.try_emplace(label_values);
    if (inserted) it->second = make_();
    return *it->second;
}

template <typename T>
void Family<T>::set_callback(const std::vector<std::string>& label_values, std::function<double()> callback)
    requires std::same_as<T, Gauge>
{
    with_labels(label_values);
    std::lock_guard<std::mutex> lock(mutex_);
    callbacks_[label_values] = std::move(callback);
}

template <typename T>
void Family<T>::render(std::string& out) const {
    if (!help().empty()) out += "# HELP " + name() + " " + escape_help(help()) + "\n";
    out += "# TYPE " + name() + " " + type_name(type()) + "\n";
    std::lock_guard<std::mutex> lock(mutex_);
    if constexpr (std::same_as<T, Gauge>) {
        for (const auto& [label_values, callback] : callbacks_) children_.at(label_values)->set(callback());
    }
    for (const auto& [label_values, child] : children_) render_child(out, *this, label_values, *child);
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

}  // namespace tern::metrics
