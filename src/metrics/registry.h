// The metrics registry: registers counter, gauge and histogram families under validated, unique names and renders
// them all in the Prometheus text exposition format 0.0.4 (what GET /metrics serves). No HTTP here.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "metrics/family.h"

namespace tern::metrics {

// Thread-safe: registration, render() and updates through the returned families may run concurrently. The
// returned family pointers live as long as the Registry; families cannot be removed.
//
// Registration fails with kInvalidArgument for a metric name outside [a-zA-Z_:][a-zA-Z0-9_:]*, a label name
// outside [a-zA-Z_][a-zA-Z0-9_]* or starting with "__", a repeated label name, `le` on a histogram, histogram
// bounds that are not finite and strictly increasing, or a name whose series would collide with a registered
// family's (a histogram `x` also owns `x_bucket`, `x_sum` and `x_count`).
class Registry {
public:
    Registry() = default;
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    Result<Family<Counter>*> add_counter(std::string name, std::string help,
                                         std::vector<std::string> label_names = {});
    Result<Family<Gauge>*> add_gauge(std::string name, std::string help, std::vector<std::string> label_names = {});
    // `bounds` are the buckets' upper bounds without +Inf, which every histogram has.
    Result<Family<Histogram>*> add_histogram(std::string name, std::string help, std::vector<double> bounds,
                                             std::vector<std::string> label_names = {});

    // Every family, sorted by name, each as HELP (omitted when the help is empty), TYPE and its samples sorted by
    // label values; histogram buckets ascend and end with +Inf, then _sum and _count. Ends with a newline unless
    // nothing is registered. Runs gauge callbacks (see Family::set_callback).
    std::string render() const;

private:
    // Validates a new family's names and reserves its series names; the caller holds mutex_.
    Status reserve(const std::string& name, MetricType type, const std::vector<std::string>& label_names);
    template <typename T>
    Family<T>* insert(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
                      typename Family<T>::Factory make);

    mutable std::mutex mutex_;
    std::map<std::string, std::unique_ptr<FamilyBase>> families_;  // by name: the rendering order
    std::set<std::string> series_names_;                           // every sample name a family can emit
};

}  // namespace tern::metrics
