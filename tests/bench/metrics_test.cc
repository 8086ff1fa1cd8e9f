#include "bench/metrics.h"

#include <gtest/gtest.h>

namespace tern::bench {
namespace {

RequestRecord ok_record(double start, double ttft, std::vector<double> itl, int64_t output_tokens) {
    RequestRecord record;
    record.success = true;
    record.start_s = start;
    record.arrival_s = start;
    record.ttft_s = ttft;
    record.itl_s = std::move(itl);
    double e2el = ttft;
    for (double gap : record.itl_s) e2el += gap;
    record.e2el_s = e2el;
    record.input_tokens = 100;
    record.output_tokens = output_tokens;
    record.output_tokens_from_usage = true;
    return record;
}

RequestRecord failed_record(double start, double e2el, ErrorKind kind) {
    RequestRecord record;
    record.start_s = start;
    record.e2el_s = e2el;
    record.error_kind = kind;
    return record;
}

TEST(Metrics, SummarizeComputesVllmFigures) {
    // Two requests of 5 tokens (one chunk each), TTFT 0.1 and 0.3 s, ITL 0.01 s; one connect failure.
    const std::vector<RequestRecord> records = {
        ok_record(0.0, 0.1, {0.01, 0.01, 0.01, 0.01}, 5),
        ok_record(0.5, 0.3, {0.01, 0.01, 0.01, 0.01}, 5),
        failed_record(0.2, 0.001, ErrorKind::kConnect),
    };
    const Summary s = summarize(records, 2.0, GoodputSlo{}, 0.01);
    EXPECT_EQ(s.completed, 2);
    EXPECT_EQ(s.failed, 1);
    EXPECT_EQ(s.total_input_tokens, 200);
    EXPECT_EQ(s.total_output_tokens, 10);
    EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
    EXPECT_DOUBLE_EQ(s.output_throughput, 5.0);
    EXPECT_DOUBLE_EQ(s.total_token_throughput, 105.0);
    EXPECT_NEAR(s.ttft_ms.mean, 200, 1e-9);
    EXPECT_NEAR(s.ttft_ms.p99, 100 + 200 * 0.99, 1e-9);
    EXPECT_NEAR(s.tpot_ms.mean, 10, 1e-9);
    EXPECT_NEAR(s.itl_ms.mean, 10, 1e-9);
    EXPECT_EQ(s.itl_ms.count, 8u);
    EXPECT_NEAR(s.e2el_ms.max, 340, 1e-9);
    EXPECT_FALSE(s.request_goodput.has_value());
    EXPECT_EQ(s.errors_by_kind.at("connect"), 1);
    EXPECT_EQ(s.max_concurrent_requests, 1);  // [0, .14), [.2, .201), [.5, .84) never overlap
    EXPECT_DOUBLE_EQ(s.streamed_tokens_per_cpu_s, 1000);
    EXPECT_EQ(s.output_tokens_from_usage, 2);
}

TEST(Metrics, GoodputCountsRequestsMeetingEverySlo) {
    const std::vector<RequestRecord> records = {
        ok_record(0.0, 0.1, {0.01}, 2),   // TTFT 100 ms, TPOT 10 ms
        ok_record(0.0, 0.3, {0.01}, 2),   // TTFT 300 ms
        ok_record(0.0, 0.1, {0.05}, 2),   // TPOT 50 ms
    };
    Result<GoodputSlo> slo = parse_goodput({"ttft:200", "tpot:20"});
    ASSERT_TRUE(slo.is_ok());
    const Summary s = summarize(records, 1.0, slo.value(), 0);
    ASSERT_TRUE(s.request_goodput.has_value());
    EXPECT_EQ(s.good_requests, 1);
    EXPECT_DOUBLE_EQ(*s.request_goodput, 1.0);
    EXPECT_EQ(s.max_concurrent_requests, 3);
    EXPECT_FALSE(parse_goodput({"ttft=200"}).is_ok());
    EXPECT_FALSE(parse_goodput({"queue:5"}).is_ok());
    EXPECT_FALSE(parse_goodput({"ttft:-1"}).is_ok());
}

TEST(Metrics, TimelineSpreadsConcurrencyAndTokensOverBuckets) {
    // One request in flight over [0, 2) s with tokens at 0.5, 1.0 and 1.5 s; another over [1, 2) s.
    std::vector<RequestRecord> records = {ok_record(0.0, 0.5, {0.5, 0.5}, 3), ok_record(1.0, 0.25, {0.25, 0.5}, 3)};
    records[0].e2el_s = 2.0;
    records[1].e2el_s = 1.0;
    const Timeline timeline = build_timeline(records, 2.0, 0.5);
    ASSERT_GE(timeline.concurrency.size(), 4u);
    EXPECT_DOUBLE_EQ(timeline.concurrency[0], 1.0);
    EXPECT_DOUBLE_EQ(timeline.concurrency[1], 1.0);
    EXPECT_DOUBLE_EQ(timeline.concurrency[2], 2.0);
    EXPECT_DOUBLE_EQ(timeline.concurrency[3], 2.0);
    // Bucket [1.0, 1.5): the first request's token at 1.0 and the second's at 1.25 -> 2 tokens / 0.5 s.
    EXPECT_DOUBLE_EQ(timeline.output_tokens_per_s[2], 4.0);
    double tokens = 0;
    for (double rate : timeline.output_tokens_per_s) tokens += rate * 0.5;
    EXPECT_DOUBLE_EQ(tokens, 6.0);
}

}  // namespace
}  // namespace tern::bench
