// A metric family: one name, help text and type, and one child series per set of label values, created on first
// use. Families are made and owned by a Registry (registry.h), which also renders them.
#pragma once

#include <concepts>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "metrics/metric.h"

namespace tern::metrics {

// The type-independent part the Registry keeps and renders.
class FamilyBase {
public:
    FamilyBase(std::string name, std::string help, MetricType type, std::vector<std::string> label_names)
        : name_(std::move(name)), help_(std::move(help)), type_(type), label_names_(std::move(label_names)) {}
    virtual ~FamilyBase() = default;
    FamilyBase(const FamilyBase&) = delete;
    FamilyBase& operator=(const FamilyBase&) = delete;

    const std::string& name() const { return name_; }
    const std::string& help() const { return help_; }
    MetricType type() const { return type_; }
    const std::vector<std::string>& label_names() const { return label_names_; }

    // Appends this family's HELP, TYPE and sample lines; children in label-value order. Runs gauge callbacks.
    virtual void render(std::string& out) const = 0;

private:
    std::string name_;
    std::string help_;
    MetricType type_;
    std::vector<std::string> label_names_;
};

// Thread-safe: with_labels(), get(), set_callback() and render() may run concurrently from any threads; the
// family's mutex guards only the child map, so updating a child already in hand takes no lock.
template <typename T>
class Family final : public FamilyBase {
public:
    using Factory = std::function<std::unique_ptr<T>()>;

    Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names, Factory make)
        : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)), make_(std::move(make)) {}

    // The child for these label values, one per label name (checked), created on first use. The reference lives
    // as long as the Registry; hot paths should keep it instead of looking it up per update.
    T& with_labels(const std::vector<std::string>& label_values);
    // The only child of a family without labels (which exists from registration, so it renders as 0 at once).
    T& get() { return with_labels({}); }

    // Gauges only: at each render the child's value is set from `callback` first (e.g. resident memory). The
    // callback runs on the rendering thread under this family's and the Registry's locks: it must not touch this
    // family or register metrics.
    void set_callback(const std::vector<std::string>& label_values, std::function<double()> callback)
        requires std::same_as<T, Gauge>;

    void render(std::string& out) const override;

private:
    Factory make_;
    mutable std::mutex mutex_;
    std::map<std::vector<std::string>, std::unique_ptr<T>> children_;  // ordered: a stable rendering
    std::map<std::vector<std::string>, std::function<double()>> callbacks_;
};

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

}  // namespace tern::metrics
