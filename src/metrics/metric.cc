#include "metrics/metric.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace tern::metrics {

void Counter::inc(double amount) {
    TERN_CHECK(amount >= 0) << "a counter cannot decrease (inc by " << amount << ")";
    value_.fetch_add(amount, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), bucket_counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
    for (size_t bucket_idx = 0; bucket_idx <= bounds_.size(); ++bucket_idx) bucket_counts_[bucket_idx] = 0;
}

void Histogram::observe(double value) {
    // lower_bound: the first bound >= value, so a value equal to a bound counts in that bound's bucket.
    size_t bucket_idx = std::isnan(value) ? bounds_.size()
                                          : std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
    bucket_counts_[bucket_idx].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
    Snapshot snapshot;
    snapshot.cumulative_counts.reserve(bounds_.size() + 1);
    for (size_t bucket_idx = 0; bucket_idx <= bounds_.size(); ++bucket_idx) {
        snapshot.count += bucket_counts_[bucket_idx].load(std::memory_order_relaxed);
        snapshot.cumulative_counts.push_back(snapshot.count);
    }
    snapshot.sum = sum_.load(std::memory_order_relaxed);
    return snapshot;
}

}  // namespace tern::metrics
