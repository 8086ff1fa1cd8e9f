// `tern plan` end to end: flags in, JSON or text out, one clear error line for bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e/run_command.h"

namespace tern {
namespace {

using testing::run_tern;

TEST(PlanCli, IssueExampleAsJson) {
    const auto result = run_tern(
        "plan --model llama2-7b --device-mem 24 --weight-bytes 14GB --input-len 800 "
        "--output-len 200 --json");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const nlohmann::json plan = nlohmann::json::parse(result.out);
    EXPECT_EQ(plan["weight_bytes"].get<int64_t>(), 14'000'000'000);
    EXPECT_EQ(plan["kv_bytes_per_token"].get<int64_t>(), 524288);
    EXPECT_EQ(plan["kv_bytes_per_request"].get<int64_t>(), 524'288'000);
    EXPECT_EQ(plan["max_concurrent_requests"].get<int64_t>(), 19);
    EXPECT_EQ(plan["recommended_concurrent_requests"].get<int64_t>(), 14);
    EXPECT_EQ(plan["devices_needed"].get<int64_t>(), 1);
    EXPECT_FALSE(plan.contains("cost_per_million_output_tokens"));
}

TEST(PlanCli, GpuPlanWithPeakAndCost) {
    const auto result = run_tern(
        "plan -m llama3-8b --device h100 --weight-type q8_0 --kv-type q8_0 --peak-rps 30 "
        "--input-p50 500 --input-p95 3000 --output-len 300 --slo-tpot-ms 50 "
        "--device-hour-cost 2.5 --json");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const nlohmann::json plan = nlohmann::json::parse(result.out);
    EXPECT_GT(plan["cost_per_million_output_tokens"].get<double>(), 0);
    EXPECT_GE(plan["devices_needed"].get<int64_t>(), 1);
    EXPECT_LE(plan["throughput"]["planned"]["tpot_ms"].get<double>(), 50);
    EXPECT_EQ(plan["kv_cache"]["planning_length"], "P95");
    EXPECT_EQ(plan["what_if"].size(), 8u);
}

TEST(PlanCli, TextReportShowsFormulasAndTables) {
    const auto result = run_tern("plan --model qwen2.5-7b --device l4 --devices 4");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.out.find("how:"), std::string::npos);
    EXPECT_NE(result.out.find("KV per token = 2 x 28 layers x 4 KV heads x 128 head dim x 2 bytes (f16)"),
              std::string::npos)
        << result.out;
    EXPECT_NE(result.out.find("what if"), std::string::npos);
    EXPECT_NE(result.out.find("per replica by concurrency"), std::string::npos);
}

TEST(PlanCli, ListsPresets) {
    const auto result = run_tern("plan --list");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.out.find("llama3-70b"), std::string::npos);
    EXPECT_NE(result.out.find("h200"), std::string::npos);
}

TEST(PlanCli, BadInputsGiveOneErrorLine) {
    const std::pair<const char*, const char*> cases[] = {
        {"plan --model llama2-7b", "choose a device"},
        {"plan --model llama2-7b --device tpu", "unknown device 'tpu'"},
        {"plan --model nope --device h100", "neither a preset"},
        {"plan --device h100", "--model is required"},
        {"plan --model llama2-7b --device h100 --headroom 150%", "must lie in [0, 1)"},
        {"plan --model llama2-7b --device-mem 24furlongs", "unknown unit"},
        {"plan --model llama2-7b --device h100 --kv-type q6_K", "KV cache type q6_K is not supported"},
        {"plan --model llama2-7b --device h100 --weight-type zz", "unknown weight type 'zz'"},
        {"plan --model llama2-7b --device h100 --profile /nonexistent.json", "cannot open the profile"},
        {"plan --model llama2-7b --device h100 --input-p50 900 --input-p95 100", "must not decrease"},
        {"plan --model llama2-7b --device h100 --lengths /nonexistent.txt --input-len 5", "not both"},
        {"plan --model llama2-7b --device h100 --lengths /nonexistent.txt", "cannot open the length file"},
    };
    for (const auto& [args, message] : cases) {
        const auto result = run_tern(args);
        EXPECT_EQ(result.exit_code, 1) << args;
        EXPECT_NE(result.err.find(message), std::string::npos) << args << " -> " << result.err;
        EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << "one line: " << result.err;
    }
}

}  // namespace
}  // namespace tern
