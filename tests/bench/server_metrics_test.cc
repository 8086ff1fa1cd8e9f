#include "bench/server_metrics.h"

#include <gtest/gtest.h>

namespace tern::bench {
namespace {

// An excerpt in the shape vLLM exposes (labels, buckets, a counter that must not be mistaken for a histogram).
constexpr const char* kBefore = R"(# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 2.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.8
vllm:time_to_first_token_seconds_count{model_name="m"} 4.0
vllm:num_requests_running{model_name="m"} 0.0
)";

constexpr const char* kAfter = R"(vllm:time_to_first_token_seconds_sum{model_name="m"} 2.0
vllm:time_to_first_token_seconds_count{model_name="m"} 10.0
vllm:e2e_request_latency_seconds_sum{model_name="m",engine="0"} 1.5 1700000000000
vllm:e2e_request_latency_seconds_sum{model_name="m",engine="1"} 1.5
vllm:e2e_request_latency_seconds_count{model_name="m",engine="0"} 3
vllm:e2e_request_latency_seconds_count{model_name="m",engine="1"} 3
garbage line without a value
)";

TEST(ServerMetrics, ParsesHistogramSumsAndCountsAcrossLabelSets) {
    const MetricsSnapshot before = parse_prometheus_histograms(kBefore);
    ASSERT_EQ(before.count("vllm:time_to_first_token_seconds"), 1u);
    EXPECT_DOUBLE_EQ(before.at("vllm:time_to_first_token_seconds").sum, 0.8);
    EXPECT_DOUBLE_EQ(before.at("vllm:time_to_first_token_seconds").count, 4);
    EXPECT_EQ(before.count("vllm:num_requests_running"), 0u);
    const MetricsSnapshot after = parse_prometheus_histograms(kAfter);
    EXPECT_DOUBLE_EQ(after.at("vllm:e2e_request_latency_seconds").sum, 3.0);
    EXPECT_DOUBLE_EQ(after.at("vllm:e2e_request_latency_seconds").count, 6);
}

TEST(ServerMetrics, DeltasGiveTheMeanOfWhatTheRunAdded) {
    const nlohmann::json deltas =
        histogram_deltas(parse_prometheus_histograms(kBefore), parse_prometheus_histograms(kAfter));
    EXPECT_DOUBLE_EQ(deltas["vllm:time_to_first_token_seconds"]["count"].get<double>(), 6);
    EXPECT_DOUBLE_EQ(deltas["vllm:time_to_first_token_seconds"]["mean"].get<double>(), 1.2 / 6);
    EXPECT_DOUBLE_EQ(deltas["vllm:e2e_request_latency_seconds"]["mean"].get<double>(), 0.5);
    EXPECT_TRUE(histogram_deltas(parse_prometheus_histograms(kAfter), parse_prometheus_histograms(kAfter)).empty());
}

}  // namespace
}  // namespace tern::bench
