// Counter, Gauge and Histogram values: bucket boundaries and exact totals under concurrent updates.
#include "metrics/metric.h"

#include <cmath>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "metrics/registry.h"

namespace tern::metrics {
namespace {

TEST(HistogramTest, ValueEqualToBoundFallsInThatBucket) {
    Histogram histogram({0.1, 1.0, 2.5});
    histogram.observe(1.0);   // == bound 1 -> le="1"
    histogram.observe(0.1);   // == bound 0.1 -> le="0.1"
    histogram.observe(std::nextafter(1.0, 2.0));  // just above 1 -> le="2.5"
    histogram.observe(2.5);   // == last bound -> le="2.5"
    histogram.observe(3.0);   // above every bound -> +Inf only
    histogram.observe(-7.0);  // below every bound -> le="0.1"
    Histogram::Snapshot snapshot = histogram.snapshot();
    EXPECT_EQ(snapshot.cumulative_counts, (std::vector<uint64_t>{2, 3, 5, 6}));
    EXPECT_EQ(snapshot.count, 6u);
    EXPECT_DOUBLE_EQ(snapshot.sum, 1.0 + 0.1 + std::nextafter(1.0, 2.0) + 2.5 + 3.0 - 7.0);
}

TEST(HistogramTest, NanCountsOnlyInTheInfBucket) {
    Histogram histogram({1.0});
    histogram.observe(std::nan(""));
    Histogram::Snapshot snapshot = histogram.snapshot();
    EXPECT_EQ(snapshot.cumulative_counts, (std::vector<uint64_t>{0, 1}));
    EXPECT_TRUE(std::isnan(snapshot.sum));
}

TEST(HistogramTest, NoBoundsHasOnlyTheInfBucket) {
    Histogram histogram({});
    histogram.observe(5);
    histogram.observe(-5);
    EXPECT_EQ(histogram.snapshot().cumulative_counts, (std::vector<uint64_t>{2}));
}

TEST(GaugeTest, SetIncDec) {
    Gauge gauge;
    gauge.set(10);
    gauge.inc(2.5);
    gauge.dec();
    EXPECT_DOUBLE_EQ(gauge.value(), 11.5);
}

TEST(CounterDeathTest, DecreasingIsAProgrammingError) {
    Counter counter;
    EXPECT_DEATH(counter.inc(-1), "cannot decrease");
}

// Several threads create children on first use, update them and render concurrently; totals must be exact.
TEST(ConcurrencyTest, ConcurrentUpdatesGiveExactTotals) {
    constexpr int kNumThreads = 8;
    constexpr int kNumUpdates = 20000;
    Registry registry;
    Family<Counter>* counter = registry.add_counter("tokens_total", "t", {"reason"}).value();
    Family<Gauge>* gauge = registry.add_gauge("running", "r").value();
    Family<Histogram>* histogram = registry.add_histogram("latency", "l", {1, 2, 3}, {"reason"}).value();

    std::vector<std::thread> threads;
    for (int thread_idx = 0; thread_idx < kNumThreads; ++thread_idx) {
        threads.emplace_back([&, thread_idx] {
            const std::string reason = thread_idx % 2 == 0 ? "stop" : "length";
            for (int update_idx = 0; update_idx < kNumUpdates; ++update_idx) {
                counter->with_labels({reason}).inc();
                counter->with_labels({"all"}).inc(2);
                gauge->get().inc();
                if (update_idx % 2 == 0) gauge->get().dec();
                histogram->with_labels({reason}).observe(update_idx % 4);  // 0, 1, 2, 3 in turn
                if (thread_idx == 0 && update_idx % 1000 == 0) {
                    EXPECT_FALSE(registry.render().empty());
                }
            }
        });
    }
    for (std::thread& thread : threads) thread.join();

    EXPECT_EQ(counter->with_labels({"stop"}).value(), kNumThreads / 2 * kNumUpdates);
    EXPECT_EQ(counter->with_labels({"length"}).value(), kNumThreads / 2 * kNumUpdates);
    EXPECT_EQ(counter->with_labels({"all"}).value(), 2.0 * kNumThreads * kNumUpdates);
    EXPECT_EQ(gauge->get().value(), kNumThreads * kNumUpdates / 2);
    Histogram::Snapshot snapshot = histogram->with_labels({"stop"}).snapshot();
    const uint64_t per_value = kNumThreads / 2 * kNumUpdates / 4;
    EXPECT_EQ(snapshot.cumulative_counts, (std::vector<uint64_t>{2 * per_value, 3 * per_value, 4 * per_value,
                                                                 4 * per_value}));
    EXPECT_EQ(snapshot.sum, (0 + 1 + 2 + 3) * static_cast<double>(per_value));
}

}  // namespace
}  // namespace tern::metrics
