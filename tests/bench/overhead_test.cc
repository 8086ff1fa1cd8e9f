// The bench's own cost, measured against a loopback server that streams at a fixed pace: how much later than the
// server wrote them the client timestamps token chunks, how much it adds to TTFT, and how many streamed tokens it
// handles per second of its own CPU time (issue 6: >= 2000 tokens/s per core, < 1 ms added latency).
//
// On a busy machine (this one has two cores shared with compilers and other test binaries) every chunk costs two
// thread wake-ups, the server's and the client's, and each can be late by milliseconds whatever the client does. The
// latency bound is therefore 1 ms plus twice the wake-up lateness measured alongside; on a quiet machine that lateness
// is tens of microseconds and the bound is the 1 ms (docs/perf/bench.md has such figures).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <thread>

#include "bench/fixture_server.h"
#include "bench/load_runner.h"
#include "bench/stats.h"

namespace tern::bench {
namespace {

// Median of how late a 1 ms sleep wakes up, in ms: what the scheduler adds to any wake-up right now.
double wakeup_lateness_ms() {
    std::vector<double> lateness;
    for (int idx = 0; idx < 60; ++idx) {
        const Clock::time_point start = Clock::now();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        lateness.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count() - 1.0);
    }
    return describe(lateness).median;
}

using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST(Overhead, ClientAddsUnderOneMillisecondAndStreamsOver2000TokensPerCpuSecond) {
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "the overhead bounds are for optimized builds; this one is a debug or sanitizer build";
#endif
    testing::FixtureOptions options;
    options.flavor = testing::ServerFlavor::kVllm;
    options.ttft = milliseconds(20);
    options.itl = microseconds(1000);
    testing::FixtureServer server(options);
    WorkloadOptions workload_options;
    workload_options.num_prompts = 16;
    workload_options.input = LengthSpec::fixed(64);
    workload_options.output = LengthSpec::fixed(200);
    const std::vector<RequestSpec> workload = build_workload(workload_options).value();
    const net::BaseUrl base = net::parse_base_url(server.base_url()).value();
    RequestTemplate request_template;
    request_template.model = options.model_id;
    const SenderFactory factory = [&] {
        return std::make_unique<HttpRequestSender>(base, net::HttpClientOptions{}, request_template);
    };
    LoadOptions load;
    load.max_concurrency = 4;
    load.num_requests = 16;
    const double lateness_before = wakeup_lateness_ms();
    const LoadResult result = run_load(workload, load, factory, nullptr);
    const double lateness = std::max(lateness_before, wakeup_lateness_ms());

    std::map<std::string, testing::ServedRequest> served;
    for (const testing::ServedRequest& request : server.requests()) served[request.body["prompt"]] = request;
    auto ms_between = [](Clock::time_point from, Clock::time_point to) {
        return std::chrono::duration<double, std::milli>(to - from).count();
    };
    std::vector<double> ttft_added_ms;  // client TTFT - server TTFT: send path plus first delivery
    std::vector<double> delivery_ms;    // client timestamp of each token chunk - server write time
    int64_t tokens = 0;
    for (const RequestRecord& record : result.records) {
        ASSERT_TRUE(record.success) << record.error;
        const testing::ServedRequest& request = served.at(workload[static_cast<size_t>(record.index)].prompt);
        ASSERT_EQ(request.token_chunk_times.size(), record.itl_s.size() + 1);
        ttft_added_ms.push_back(record.ttft_s * 1000 - ms_between(request.received, request.token_chunk_times[0]));
        const Clock::time_point sent =
            result.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(record.start_s));
        double client_s = record.ttft_s;
        for (size_t chunk = 0; chunk < request.token_chunk_times.size(); ++chunk) {
            if (chunk > 0) client_s += record.itl_s[chunk - 1];
            delivery_ms.push_back(client_s * 1000 - ms_between(sent, request.token_chunk_times[chunk]));
        }
        tokens += record.output_tokens;
    }
    const Distribution ttft = describe(ttft_added_ms);
    const Distribution delivery = describe(delivery_ms);
    const double tokens_per_cpu_s = static_cast<double>(tokens) / result.client_cpu_s;
    const double cpu_ms_per_chunk = result.client_cpu_s * 1000 / static_cast<double>(delivery.count);
    const double bound_ms = 1.0 + 2 * lateness;
    std::printf("added to TTFT ms: mean %.3f median %.3f p99 %.3f | chunk delivery ms: mean %.3f median %.3f p99 %.3f "
                "| wake-up lateness %.3f ms -> bound %.3f ms | %lld tokens, client CPU %.3f s = %.4f ms per chunk, "
                "%.0f tokens per CPU second\n",
                ttft.mean, ttft.median, ttft.p99, delivery.mean, delivery.median, delivery.p99, lateness, bound_ms,
                static_cast<long long>(tokens), result.client_cpu_s, cpu_ms_per_chunk, tokens_per_cpu_s);
    EXPECT_EQ(tokens, 16 * 200);
    EXPECT_GT(ttft.median, 0.0);  // a request cannot be answered before it is sent
    EXPECT_LT(ttft.median, bound_ms);
    EXPECT_LT(delivery.median, bound_ms);
    EXPECT_LT(delivery.mean, bound_ms);
    // The client's own work per chunk (decode, parse, record) is far below 1 ms whatever the machine's load.
    EXPECT_LT(cpu_ms_per_chunk, 0.1);
    EXPECT_GE(tokens_per_cpu_s, 2000);
}

}  // namespace
}  // namespace tern::bench
