// The recorder and the active-recorder switch: events land only in the active recorder, none after it is cleared
// (even from spans open across the switch, on other threads), and the JSON is Chrome's format in time order.
#include "trace/trace.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

namespace tern::trace {
namespace {

TEST(Trace, SpansRecordOnlyWhileTheirRecorderIsActive) {
    Recorder recorder;
    { Span span("before", "test"); }
    ASSERT_TRUE(set_active(&recorder));
    Recorder other;
    EXPECT_FALSE(set_active(&other)) << "one recorder at a time";
    {
        Span outer("outer", "test");
        outer.arg("tokens", 7);
        Span inner("inner", "test");
    }
    std::optional<Span> open_across;
    open_across.emplace("open across the switch", "test");
    clear_active(&recorder);
    open_across.reset();
    { Span span("after", "test"); }
    const nlohmann::json json = nlohmann::json::parse(recorder.to_json());
    std::vector<std::string> names;
    for (const auto& event : json["traceEvents"]) {
        if (event["ph"] == "X") names.push_back(event["name"]);
    }
    EXPECT_EQ(names, (std::vector<std::string>{"outer", "inner"}));  // time order; the enclosing span first
    const auto& outer = json["traceEvents"][1];
    EXPECT_EQ(outer["args"]["tokens"], 7);
    EXPECT_GE(outer["dur"].get<double>(), json["traceEvents"][2]["dur"].get<double>());
    EXPECT_EQ(json["otherData"]["events"], 2);
}

TEST(Trace, RequestIntervalsArePairedAndNested) {
    Recorder recorder;
    ASSERT_TRUE(set_active(&recorder));
    const Clock::time_point t0 = Clock::now();
    const auto at = [&](int us) { return t0 + std::chrono::microseconds(us); };
    request_interval(5, "prefill chunk", at(10), at(20), {Arg{"tokens", 3}});
    request_interval(5, "prefill", at(10), at(40));
    request_instant(5, "finish", at(50));
    request_interval(5, "never scheduled", at(10), Clock::time_point{});
    clear_active(&recorder);
    const nlohmann::json json = nlohmann::json::parse(recorder.to_json());
    std::vector<std::string> order;
    for (const auto& event : json["traceEvents"]) {
        if (event["ph"] != "M") order.push_back(event["ph"].get<std::string>() + " " + event["name"].get<std::string>());
        if (event["ph"] != "M") EXPECT_EQ(event["id"], "0x5");
    }
    EXPECT_EQ(order, (std::vector<std::string>{"b prefill", "b prefill chunk", "e prefill chunk", "e prefill",
                                               "n finish"}));
}

TEST(Trace, ClearingWhileOtherThreadsRecordLosesNoMemoryAndLeavesNothingBehind) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int idx = 0; idx < 3; ++idx) {
        threads.emplace_back([&stop] {
            name_this_thread("worker");
            while (!stop.load()) {
                Span span("work", "test");
                span.arg("n", 1);
            }
        });
    }
    for (int round = 0; round < 50; ++round) {
        auto recorder = std::make_unique<Recorder>();
        ASSERT_TRUE(set_active(recorder.get()));
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        clear_active(recorder.get());
        const size_t events = recorder->num_events();
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        EXPECT_EQ(recorder->num_events(), events) << "an event arrived after clear_active";
        recorder.reset();  // under ASan, a late write would be a use after free
    }
    stop = true;
    for (std::thread& thread : threads) thread.join();
}

TEST(Trace, PastTheLimitEventsAreCountedNotKept) {
    Recorder recorder(3);
    ASSERT_TRUE(set_active(&recorder));
    for (int idx = 0; idx < 5; ++idx) Span span("s", "test");
    clear_active(&recorder);
    EXPECT_EQ(recorder.num_events(), 3u);
    EXPECT_EQ(recorder.num_dropped(), 2u);
    EXPECT_EQ(nlohmann::json::parse(recorder.to_json())["otherData"]["dropped_events"], 2);
}

}  // namespace
}  // namespace tern::trace
