// Whole plans: layout choice, latency targets, devices at the peak, cost, what-if rows, JSON and explanation.
#include <gtest/gtest.h>

#include <cmath>

#include "plan/plan_report.h"
#include "plan/planner.h"

namespace tern::plan {
namespace {

PlanOptions options_for(const char* model, const char* device, std::optional<DType> weight_type = std::nullopt) {
    PlanOptions options;
    options.model = model_shape_from_preset(model).value();
    options.device = find_device(device).value();
    options.weight_type = weight_type;
    options.workload.input.mean = 1000;
    options.workload.output.mean = 250;
    return options;
}

TEST(Planner, SmallModelFitsOneDevice) {
    const Plan plan = make_plan(options_for("llama3-8b", "a100-80gb")).value();
    EXPECT_TRUE(plan.fits);
    EXPECT_EQ(plan.memory.devices(), 1);
    EXPECT_EQ(plan.devices.devices_needed, 1);
    EXPECT_NE(plan.parallel_advice.find("fits one device"), std::string::npos) << plan.parallel_advice;
    ASSERT_TRUE(plan.throughput.has_value());
    // Planned at the knee: the fewest requests that reach 95% of the throughput at the memory limit.
    const ThroughputPlan& perf = *plan.throughput;
    EXPECT_LT(perf.concurrency, plan.memory.recommended_concurrent);
    EXPECT_EQ(perf.table.back().concurrency, plan.memory.recommended_concurrent);
    EXPECT_GE(perf.planned.output_tokens_per_s, 0.95 * perf.table.back().output_tokens_per_s);
    EXPECT_NE(perf.bound.find("knee"), std::string::npos) << perf.bound;
}

TEST(Planner, SeventyBillionAtF16NeedsTensorParallelism) {
    const Plan plan = make_plan(options_for("llama3-70b", "h100", DType::kF16)).value();
    EXPECT_GT(plan.weights.bytes, 140'000'000'000);  // 70.6 B params x 2 bytes
    EXPECT_TRUE(plan.fits);
    EXPECT_GE(plan.memory.tensor_parallel, 2);
    EXPECT_EQ(plan.memory.pipeline_parallel, 1);
    EXPECT_NE(plan.parallel_advice.find("tensor parallel"), std::string::npos) << plan.parallel_advice;
    // The smallest tensor-parallel degree that leaves KV room for one request.
    PlanOptions one = options_for("llama3-70b", "h100", DType::kF16);
    one.tensor_parallel = 1;
    EXPECT_FALSE(make_plan(one).value().fits);
}

TEST(Planner, BeyondOneNodeSplitsLayersIntoPipelineStages) {
    const Plan plan = make_plan(options_for("llama3-70b", "rtx4090", DType::kF32)).value();  // 282 GB of weights
    EXPECT_TRUE(plan.fits);
    EXPECT_EQ(plan.memory.tensor_parallel, 8);
    EXPECT_EQ(plan.memory.pipeline_parallel, 2);
    EXPECT_NE(plan.parallel_advice.find("pipeline parallel 2"), std::string::npos) << plan.parallel_advice;
}

TEST(Planner, TooFewDevicesDoesNotFit) {
    PlanOptions options = options_for("llama2-70b", "rtx4090", DType::kF16);
    options.num_devices = 1;
    const Plan plan = make_plan(options).value();
    EXPECT_FALSE(plan.fits);
    EXPECT_EQ(plan.memory.recommended_concurrent, 0);
    EXPECT_EQ(plan.devices.devices_needed, 0);
    EXPECT_NE(plan.parallel_advice.find("does not fit"), std::string::npos);
}

TEST(Planner, TpotTargetLowersTheConcurrency) {
    PlanOptions options = options_for("llama3-8b", "l4", DType::kQ8_0);
    const Plan free = make_plan(options).value();
    ASSERT_GT(free.throughput->concurrency, 4);
    options.workload.slo_tpot_ms = free.throughput->table.front().tpot_s * 1e3 * 1.5;  // 1.5x the 1-request TPOT
    const Plan bound = make_plan(options).value();
    EXPECT_LT(bound.throughput->concurrency, free.throughput->concurrency);
    EXPECT_EQ(bound.throughput->bound, "TPOT target");
    EXPECT_LE(bound.throughput->planned.tpot_s * 1e3, options.workload.slo_tpot_ms);
    options.workload.slo_tpot_ms = 0.001;
    const Plan missed = make_plan(options).value();
    EXPECT_FALSE(missed.throughput->slo_met);
    EXPECT_FALSE(missed.warnings.empty());
}

TEST(Planner, DevicesAtThePeakFollowThroughputAndMemory) {
    PlanOptions options = options_for("llama3-8b", "a10", DType::kQ8_0);
    options.workload.peak_requests_per_s = 20;
    options.device_hour_cost = 1.5;
    const Plan plan = make_plan(options).value();
    ASSERT_TRUE(plan.throughput.has_value());
    const double per_replica = plan.throughput->planned.requests_per_s;
    EXPECT_EQ(plan.devices.devices_by_throughput, static_cast<int64_t>(std::ceil(20 / per_replica)));
    EXPECT_EQ(plan.devices.devices_needed,
              std::max(plan.devices.devices_by_memory, plan.devices.devices_by_throughput));
    options.workload.peak_requests_per_s = 40;
    const Plan doubled = make_plan(options).value();
    EXPECT_GT(doubled.devices.devices_needed, plan.devices.devices_needed);
    EXPECT_LE(doubled.devices.devices_needed, 2 * plan.devices.devices_needed);
    // Cost: one device-hour buys tokens/s x 3600 tokens.
    const double expected = 1.5 / (plan.throughput->planned.output_tokens_per_s * 3600) * 1e6;
    ASSERT_TRUE(plan.cost_per_million_output_tokens.has_value());
    EXPECT_NEAR(*plan.cost_per_million_output_tokens, expected, expected * 1e-12);
    ASSERT_TRUE(plan.cost_per_million_at_peak.has_value());
    EXPECT_GE(*plan.cost_per_million_at_peak, *plan.cost_per_million_output_tokens * 0.999);
}

TEST(Planner, WhatIfTableComparesWeightsKvAndHeadroom) {
    const Plan plan = make_plan(options_for("qwen2.5-7b", "l4")).value();
    ASSERT_EQ(plan.what_if.size(), 8u);
    const auto row = [&](DType weights, DType kv, double headroom) {
        for (const WhatIfRow& candidate : plan.what_if) {
            if (candidate.weight_type == weights && candidate.kv_type == kv && candidate.headroom == headroom)
                return candidate;
        }
        ADD_FAILURE() << "missing what-if row";
        return WhatIfRow{};
    };
    EXPECT_LT(row(DType::kQ4_0, DType::kF16, 0.2).weight_bytes, row(DType::kQ8_0, DType::kF16, 0.2).weight_bytes);
    EXPECT_LT(row(DType::kQ8_0, DType::kQ8_0, 0.2).kv_bytes_per_request,
              row(DType::kQ8_0, DType::kF16, 0.2).kv_bytes_per_request);
    EXPECT_GT(row(DType::kQ8_0, DType::kF16, 0.1).recommended_concurrent,
              row(DType::kQ8_0, DType::kF16, 0.2).recommended_concurrent);
    EXPECT_GT(row(DType::kQ4_0, DType::kQ8_0, 0.1).recommended_concurrent,
              row(DType::kQ8_0, DType::kF16, 0.2).recommended_concurrent);
}

TEST(Planner, LengthPercentilesSizeThePlanAtP95) {
    PlanOptions options = options_for("llama3-8b", "a100-80gb");
    options.workload.input = {500, 400, 2000, 4000};
    options.workload.output = {200, 150, 600, 900};
    const Plan plan = make_plan(options).value();
    EXPECT_EQ(plan.planning_label, "P95");
    EXPECT_EQ(plan.planning_tokens, 2600);
    ASSERT_EQ(plan.lengths.size(), 5u);  // mean, P50, P95, P99, context
    EXPECT_EQ(plan.lengths[2].tokens, 2600);
    EXPECT_EQ(plan.lengths[3].tokens, 4900);
    EXPECT_EQ(plan.lengths[4].tokens, 8192);
    EXPECT_GT(plan.lengths[0].recommended_concurrent, plan.lengths[3].recommended_concurrent);
    options.context_length = 2048;
    const Plan capped = make_plan(options).value();
    EXPECT_EQ(capped.planning_tokens, 2048);
    EXPECT_FALSE(capped.warnings.empty());
}

TEST(Planner, ProfileCalibratesTheThroughput) {
    PlanOptions options = options_for("tinyllama-1.1b", "cpu", DType::kQ4_0);
    options.workload.input.mean = 128;
    options.workload.output.mean = 128;
    ProfilePoint measured;
    measured.concurrency = 16;
    measured.output_tokens_per_s = 27.3;
    options.profile = {measured};
    const Plan plan = make_plan(options).value();
    ASSERT_TRUE(plan.throughput.has_value() && plan.throughput->calibration.has_value());
    EXPECT_NEAR(plan.throughput->calibration->checks[0].predicted.output_tokens_per_s, 27.3, 1e-6);
    EXPECT_NE(plan.throughput->efficiency_source.find("calibrated"), std::string::npos);
    // What-if rows reuse the calibration instead of refitting the q4_0 measurement to q8_0 weights, so the
    // bigger weights cannot come out faster.
    std::optional<double> q8_rate, q4_rate;
    for (const WhatIfRow& row : plan.what_if) {
        if (row.kv_type != DType::kF16 || row.headroom != 0.2) continue;
        (row.weight_type == DType::kQ8_0 ? q8_rate : q4_rate) = row.output_tokens_per_s;
    }
    ASSERT_TRUE(q8_rate && q4_rate);
    EXPECT_LT(*q8_rate, *q4_rate);
    EXPECT_NEAR(*q4_rate, plan.throughput->planned.output_tokens_per_s, 1e-9);
}

TEST(Planner, WithoutLengthsTheProfilesTrafficIsPlanned) {
    PlanOptions options;
    options.model = model_shape_from_preset("tinyllama-1.1b").value();
    options.device = find_device("cpu").value();
    ProfilePoint measured;
    measured.concurrency = 8;
    measured.output_tokens_per_s = 50.5;
    measured.input_tokens_mean = 64;
    measured.output_tokens_mean = 256;
    options.profile = {measured};
    const Plan plan = make_plan(options).value();
    EXPECT_EQ(plan.options.workload.lengths_source, "profile");
    EXPECT_EQ(plan.planning_tokens, 320);
    options.profile.clear();
    const Plan defaults = make_plan(options).value();
    EXPECT_EQ(defaults.options.workload.lengths_source, "default");
    EXPECT_EQ(defaults.planning_tokens, 512 + 256);
}

TEST(PlanReport, JsonHasTheRequiredKeys) {
    PlanOptions options = options_for("llama2-7b", "rtx4090");
    nlohmann::json json = plan_json(make_plan(options).value());
    for (const char* key : {"weight_bytes", "kv_bytes_per_token", "kv_bytes_per_request", "max_concurrent_requests",
                            "recommended_concurrent_requests", "devices_needed", "what_if", "explanation"}) {
        EXPECT_TRUE(json.contains(key)) << key;
    }
    EXPECT_FALSE(json.contains("cost_per_million_output_tokens"));
    EXPECT_EQ(json["kv_bytes_per_token"].get<int64_t>(), 524288);
    EXPECT_EQ(json["kv_bytes_per_request"].get<int64_t>(), 1250 * 524288);
    options.device_hour_cost = 0.7;
    json = plan_json(make_plan(options).value());
    ASSERT_TRUE(json.contains("cost_per_million_output_tokens"));
    EXPECT_GT(json["cost_per_million_output_tokens"].get<double>(), 0);
}

TEST(PlanReport, ExplanationWritesOutTheFormulas) {
    const std::vector<std::string> lines = explain(make_plan(options_for("llama2-7b", "rtx4090")).value());
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    EXPECT_NE(text.find("KV per token = 2 x 32 layers x 32 KV heads x 128 head dim x 2 bytes (f16) = 524288 B"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("ceil(1250 / 16) = 79 blocks"), std::string::npos) << text;
    EXPECT_NE(text.find("recommended concurrent = floor("), std::string::npos) << text;
    EXPECT_NE(text.find("TPOT = step +"), std::string::npos) << text;
}

}  // namespace
}  // namespace tern::plan
