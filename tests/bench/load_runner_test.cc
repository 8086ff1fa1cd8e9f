#include "bench/load_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace tern::bench {
namespace {

using std::chrono::milliseconds;

// Sleeps for a fixed service time and tracks how many sends overlap.
class FakeSender final : public RequestSender {
public:
    struct Shared {
        milliseconds service_time{20};
        std::atomic<int64_t> in_flight{0};
        std::atomic<int64_t> max_in_flight{0};
        std::atomic<int64_t> num_sent{0};
    };
    explicit FakeSender(Shared* shared) : shared_(shared) {}

    RequestRecord send(const RequestSpec& spec, Clock::time_point run_start) override {
        const Clock::time_point start = Clock::now();
        const int64_t now = ++shared_->in_flight;
        int64_t seen = shared_->max_in_flight.load();
        while (now > seen && !shared_->max_in_flight.compare_exchange_weak(seen, now)) {
        }
        ++shared_->num_sent;
        std::this_thread::sleep_for(shared_->service_time);
        --shared_->in_flight;
        RequestRecord record;
        record.success = true;
        record.start_s = std::chrono::duration<double>(start - run_start).count();
        record.ttft_s = 0.001;
        record.e2el_s = std::chrono::duration<double>(Clock::now() - start).count();
        record.output_tokens = spec.output_len;
        return record;
    }

private:
    Shared* shared_;
};

std::vector<RequestSpec> specs(int count) {
    std::vector<RequestSpec> out(static_cast<size_t>(count));
    for (int idx = 0; idx < count; ++idx) out[static_cast<size_t>(idx)].output_len = idx + 1;
    return out;
}

TEST(LoadRunner, ClosedLoopNeverExceedsMaxConcurrencyAndQueuesTheRest) {
    FakeSender::Shared shared;
    const SenderFactory factory = [&] { return std::make_unique<FakeSender>(&shared); };
    LoadOptions options;
    options.max_concurrency = 3;
    options.num_requests = 12;
    const LoadResult result = run_load(specs(5), options, factory, nullptr);
    ASSERT_EQ(result.records.size(), 12u);
    EXPECT_EQ(shared.max_in_flight.load(), 3);
    EXPECT_LE(result.num_threads, 3);
    for (size_t idx = 0; idx < result.records.size(); ++idx) {
        EXPECT_EQ(result.records[idx].index, static_cast<int64_t>(idx));
        EXPECT_EQ(result.records[idx].output_tokens, static_cast<int64_t>(idx % 5) + 1);  // cycles the workload
        EXPECT_EQ(result.records[idx].arrival_s, 0.0);                                   // rate inf
    }
    // 12 requests of 20 ms, 3 at a time: at least 4 rounds; the last ones waited for a slot.
    EXPECT_GE(result.duration_s, 0.079);
    EXPECT_GT(result.records.back().queue_s(), 0.05);
    EXPECT_GT(result.client_cpu_s, 0.0);
}

TEST(LoadRunner, InfiniteRateWithoutLimitSendsEverythingAtOnce) {
    FakeSender::Shared shared;
    shared.service_time = milliseconds(100);
    const SenderFactory factory = [&] { return std::make_unique<FakeSender>(&shared); };
    LoadOptions options;
    options.num_requests = 16;
    const LoadResult result = run_load(specs(16), options, factory, nullptr);
    EXPECT_EQ(shared.max_in_flight.load(), 16);
    EXPECT_LT(result.duration_s, 0.5);
}

TEST(LoadRunner, OpenLoopFollowsTheArrivalRate) {
    FakeSender::Shared shared;
    shared.service_time = milliseconds(1);
    const SenderFactory factory = [&] { return std::make_unique<FakeSender>(&shared); };
    LoadOptions options;
    options.arrivals = {.request_rate = 50.0, .burstiness = std::numeric_limits<double>::infinity()};
    options.num_requests = 11;
    const LoadResult result = run_load(specs(3), options, factory, nullptr);
    ASSERT_EQ(result.records.size(), 11u);
    for (size_t idx = 0; idx < result.records.size(); ++idx) {
        EXPECT_NEAR(result.records[idx].arrival_s, 0.02 * static_cast<double>(idx), 1e-9);
        EXPECT_GE(result.records[idx].start_s, result.records[idx].arrival_s);
        EXPECT_LT(result.records[idx].start_s - result.records[idx].arrival_s, 0.05);
    }
    EXPECT_GE(result.duration_s, 0.2);
}

TEST(LoadRunner, DurationStopsSendingNewRequests) {
    FakeSender::Shared shared;
    shared.service_time = milliseconds(1);
    const SenderFactory factory = [&] { return std::make_unique<FakeSender>(&shared); };
    LoadOptions options;
    options.arrivals = {.request_rate = 100.0, .burstiness = std::numeric_limits<double>::infinity()};
    options.num_requests = 100000;
    options.duration_s = 0.305;
    const LoadResult result = run_load(specs(3), options, factory, nullptr);
    EXPECT_EQ(result.records.size(), 31u);  // arrivals at 0, 10, ..., 300 ms
    EXPECT_LT(result.duration_s, 0.5);
}

TEST(LoadRunner, ObserverSeesEverySendAndCompletion) {
    struct Counter final : LoadObserver {
        std::atomic<int> sent{0};
        std::atomic<int> done{0};
        void on_sent(int64_t) override { ++sent; }
        void on_done(const RequestRecord&) override { ++done; }
    } counter;
    FakeSender::Shared shared;
    shared.service_time = milliseconds(1);
    const SenderFactory factory = [&] { return std::make_unique<FakeSender>(&shared); };
    LoadOptions options;
    options.num_requests = 9;
    options.max_concurrency = 2;
    run_load(specs(2), options, factory, &counter);
    EXPECT_EQ(counter.sent.load(), 9);
    EXPECT_EQ(counter.done.load(), 9);
}

}  // namespace
}  // namespace tern::bench
