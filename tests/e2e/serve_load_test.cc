// tern serve at its edges under load: overload (a bounded waiting queue answers 429 at once), clients that drop
// their streams (their KV is freed within a second), and SIGTERM while requests run (they finish, new ones are
// refused, exit 0).
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <latch>
#include <nlohmann/json.hpp>
#include <thread>

#include "serve_process.h"

namespace tern {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string stream_body(int max_tokens) {
    return json{{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"ignore_eos", true}, {"stream", true},
                {"stream_options", {{"include_usage", true}}}}
        .dump();
}

double scrape(const testing::ServeProcess& server, const std::string& sample) {
    return testing::metric_value(testing::http_get(server.port(), "/metrics").body, sample);
}

// The usage chunk's completion tokens and the last choice's finish reason of a finished stream.
std::pair<int64_t, std::string> stream_summary(const testing::StreamReply& reply) {
    int64_t completion_tokens = -1;
    std::string finish_reason;
    for (const std::string& event : reply.events) {
        if (event == "[DONE]") continue;
        const json chunk = json::parse(event, nullptr, false);
        if (!chunk.is_object()) {
            ADD_FAILURE() << "not a JSON object: " << event;
            continue;
        }
        if (chunk.contains("usage") && chunk["usage"].is_object()) completion_tokens = chunk["usage"]["completion_tokens"];
        for (const json& choice : chunk["choices"]) {
            if (choice["finish_reason"].is_string()) finish_reason = choice["finish_reason"];
        }
    }
    return {completion_tokens, finish_reason};
}

// Runs `count` streamed requests at once (released together), each on its own connection.
std::vector<testing::StreamReply> burst(const testing::ServeProcess& server, int count, const std::string& body,
                                        const std::function<bool(const std::string&)>& on_event = nullptr) {
    std::vector<testing::StreamReply> replies(static_cast<size_t>(count));
    std::latch start(count);
    std::vector<std::thread> threads;
    for (int idx = 0; idx < count; ++idx) {
        threads.emplace_back([&, idx] {
            start.arrive_and_wait();
            replies[static_cast<size_t>(idx)] = testing::post_stream(server.port(), "/v1/completions", body, on_event);
        });
    }
    for (std::thread& thread : threads) thread.join();
    return replies;
}

TEST(ServeLoad, OverloadGets429AtOnceAndAdmittedRequestsComplete) {
    constexpr int kRequests = 200, kQueue = 32, kRunning = 2, kTokens = 400;
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", testing::kStoriesModel, "-t", "1", "--max-queued-requests", std::to_string(kQueue),
                            "--max-running", std::to_string(kRunning)}),
              "");
    const double resident_before = scrape(server, "tern:memory_bytes{kind=\"resident\"}");

    const std::vector<testing::StreamReply> replies = burst(server, kRequests, stream_body(kTokens));
    int admitted = 0, rejected = 0;
    std::chrono::milliseconds slowest_rejection{0}, slowest_admitted{0};
    for (const testing::StreamReply& reply : replies) {
        if (reply.status == 429) {
            ++rejected;
            slowest_rejection = std::max(slowest_rejection, reply.elapsed);
            EXPECT_FALSE(reply.retry_after.empty()) << "429 without Retry-After";
            const json body = json::parse(reply.body, nullptr, false);
            EXPECT_EQ(body["error"]["type"], "rate_limit_exceeded") << reply.body;
            continue;
        }
        ASSERT_EQ(reply.status, 200) << reply.error << " " << reply.body;
        ++admitted;
        slowest_admitted = std::max(slowest_admitted, reply.elapsed);
        EXPECT_TRUE(reply.done) << "an admitted stream ended without [DONE]: " << reply.error;
        EXPECT_EQ(stream_summary(reply), std::make_pair(int64_t{kTokens}, std::string("length")));
    }
    EXPECT_EQ(admitted + rejected, kRequests);
    EXPECT_GE(admitted, kQueue + kRunning) << "the queue and the running batch fill before anything is refused";
    EXPECT_GT(rejected, kRequests / 2);
    // "At once": refusals do not wait for a slot; they all come back before the admitted work is through.
    EXPECT_LT(slowest_rejection, std::chrono::milliseconds(2000));
    EXPECT_LT(slowest_rejection, slowest_admitted);

    ASSERT_TRUE(server.running()) << server.log();
    EXPECT_EQ(testing::http_get(server.port(), "/health").status, 200);
    EXPECT_EQ(testing::http_get(server.port(), "/ready").status, 200);
    const testing::StreamReply after = testing::post_stream(server.port(), "/v1/completions", stream_body(8));
    EXPECT_TRUE(after.status == 200 && after.done) << after.body;
    EXPECT_EQ(scrape(server, "tern:num_requests_running"), 0);
    EXPECT_EQ(scrape(server, "tern:num_requests_waiting"), 0);
    EXPECT_EQ(scrape(server, "tern:kv_cache_usage_perc"), 0);
    EXPECT_EQ(scrape(server, "tern:request_success_total{finished_reason=\"length\"}"), admitted + 1);
    // Memory stays bounded: refused requests leave nothing behind.
    EXPECT_LT(scrape(server, "tern:memory_bytes{kind=\"resident\"}"), resident_before + 256.0 * (1 << 20));
    EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(ServeLoad, DroppedStreamsFreeTheirKvWithinASecond) {
    constexpr int kStreams = 50, kTokens = 480;
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", testing::kStoriesModel, "-t", "1", "--max-running", "64"}), "");
    const double baseline = scrape(server, "tern:kv_cache_usage_perc");
    ASSERT_FALSE(std::isnan(baseline));

    // Each client reads a few chunks (so its request is mid-generation), then closes the connection.
    const auto drop_after_three = [](const std::string&) {
        thread_local int seen = 0;
        return ++seen % 3 != 0;
    };
    std::atomic<double> peak_usage{0};
    std::atomic<bool> watching{true};
    std::thread watcher([&] {
        while (watching.load()) {
            const double usage = scrape(server, "tern:kv_cache_usage_perc");
            if (usage > peak_usage.load()) peak_usage.store(usage);
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    });
    const std::vector<testing::StreamReply> replies = burst(server, kStreams, stream_body(kTokens), drop_after_three);
    const auto dropped_at = Clock::now();
    for (const testing::StreamReply& reply : replies) {
        ASSERT_EQ(reply.status, 200) << reply.body;
        EXPECT_TRUE(reply.dropped && !reply.done) << "the stream should have been cut short";
    }

    double usage = -1, running = -1;
    while (Clock::now() - dropped_at < std::chrono::seconds(5)) {
        const std::string metrics = testing::http_get(server.port(), "/metrics").body;
        usage = testing::metric_value(metrics, "tern:kv_cache_usage_perc");
        running = testing::metric_value(metrics, "tern:num_requests_running");
        if (usage == baseline && running == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const auto freed_after = Clock::now() - dropped_at;
    watching.store(false);
    watcher.join();
    EXPECT_EQ(usage, baseline);
    EXPECT_EQ(running, 0);
    EXPECT_LT(freed_after, std::chrono::seconds(1));
    EXPECT_GT(peak_usage.load(), baseline) << "the streams held KV while they ran";
    // The server aborted them rather than finishing them: far fewer tokens than asked for.
    EXPECT_EQ(scrape(server, "tern:request_success_total{finished_reason=\"abort\"}"), kStreams);
    EXPECT_LT(scrape(server, "tern:generation_tokens_total"), kStreams * kTokens / 4);
    const testing::StreamReply after = testing::post_stream(server.port(), "/v1/completions", stream_body(8));
    EXPECT_TRUE(after.status == 200 && after.done) << after.body;
    EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(ServeLoad, SigtermFinishesInFlightRequestsRefusesNewOnesAndExitsZero) {
    constexpr int kInFlight = 8, kTokens = 480;
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", testing::kStoriesModel, "-t", "1", "--max-running", "2", "--drain-timeout", "60"}),
              "");
    std::atomic<int> started{0};
    std::vector<testing::StreamReply> replies;
    std::thread load([&] {
        replies = burst(server, kInFlight, stream_body(kTokens), [&](const std::string&) {
            thread_local bool counted = false;
            if (!counted) started.fetch_add(1);
            counted = true;
            return true;
        });
    });
    // Signal once the batch is generating and the rest wait in the queue: all are in flight.
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
        const std::string metrics = testing::http_get(server.port(), "/metrics").body;
        if (started.load() >= 2 && testing::metric_value(metrics, "tern:num_requests_running") +
                                           testing::metric_value(metrics, "tern:num_requests_waiting") ==
                                       kInFlight) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    server.send_signal(SIGTERM);
    const auto signalled = Clock::now();
    // The signal is handled asynchronously: a request sent in the same instant may still be admitted.
    while (server.log().find("SIGTERM: draining") == std::string::npos &&
           Clock::now() - signalled < std::chrono::seconds(5)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }

    // Until it exits, new work is refused: 503 while draining, or no connection once the listener is closed.
    int refusals = 0;
    bool ready_said_draining = false;
    while (server.running() && Clock::now() - signalled < std::chrono::seconds(30)) {
        const testing::HttpReply reply = testing::http_post(server.port(), "/v1/completions",
                                                            R"({"prompt": "Once upon a time", "max_tokens": 4})");
        EXPECT_TRUE(reply.status == 503 || reply.status == 0) << reply.status << " " << reply.body;
        refusals += reply.status == 503 ? 1 : 0;
        ready_said_draining |= testing::http_get(server.port(), "/ready").status == 503;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(server.wait(std::chrono::seconds(30)), 0) << server.log();
    load.join();
    EXPECT_GT(refusals, 0) << "no request was tried while the server drained";
    EXPECT_TRUE(ready_said_draining);
    ASSERT_EQ(replies.size(), static_cast<size_t>(kInFlight));
    for (const testing::StreamReply& reply : replies) {
        EXPECT_EQ(reply.status, 200) << reply.body;
        EXPECT_TRUE(reply.done) << reply.error;
        EXPECT_EQ(stream_summary(reply), std::make_pair(int64_t{kTokens}, std::string("length")));
    }
}

}  // namespace
}  // namespace tern
