// The three Prometheus value types tern exports: Counter, Gauge and Histogram. Each is one time series (one set of
// label values); families, names and the text format live in family.h and registry.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace tern::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

// A value that only goes up (requests, tokens). Thread-safe and lock-free.
class Counter {
public:
    // `amount` must be >= 0 (checked): a counter that goes down breaks Prometheus's rate().
    void inc(double amount = 1.0);
    double value() const { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0.0};
};

// A value that goes up and down (running requests, KV usage). Thread-safe and lock-free.
class Gauge {
public:
    void set(double value) { value_.store(value, std::memory_order_relaxed); }
    void inc(double amount = 1.0) { value_.fetch_add(amount, std::memory_order_relaxed); }
    void dec(double amount = 1.0) { value_.fetch_add(-amount, std::memory_order_relaxed); }
    double value() const { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0.0};
};

// Counts observations into buckets with fixed upper bounds (Prometheus `le`: a value equal to a bound falls in that
// bucket) plus an implicit +Inf bucket, and keeps their sum. Thread-safe and lock-free: observe() is two relaxed
// atomic adds. A snapshot taken while others observe may have a sum that lags the counts by those observations;
// its count always equals its +Inf bucket.
class Histogram {
public:
    struct Snapshot {
        std::vector<uint64_t> cumulative_counts;  // one per bound, then +Inf
        double sum = 0.0;
        uint64_t count = 0;
    };

    // `bounds` must be finite and strictly increasing (the Registry validates them); +Inf is implicit.
    explicit Histogram(std::vector<double> bounds);

    // NaN goes to the +Inf bucket only, as in the Go client.
    void observe(double value);
    Snapshot snapshot() const;
    const std::vector<double>& bounds() const { return bounds_; }

private:
    std::vector<double> bounds_;
    std::unique_ptr<std::atomic<uint64_t>[]> bucket_counts_;  // per bucket, not cumulative; bounds_.size() + 1
    std::atomic<double> sum_{0.0};
};

}  // namespace tern::metrics
