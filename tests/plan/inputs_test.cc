// Sizes, fractions, device presets, length files and measured profiles.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "plan/device.h"
#include "plan/profile.h"
#include "plan/units.h"
#include "plan/workload.h"

namespace tern::plan {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(TERN_TEST_TMP);
    const std::string path = std::string(TERN_TEST_TMP) + "/plan_" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

TEST(Units, MemorySizesAreDecimalUnlessMarkedBinary) {
    EXPECT_EQ(parse_memory_size("24").value(), 24'000'000'000);
    EXPECT_EQ(parse_memory_size("24GB").value(), 24'000'000'000);
    EXPECT_EQ(parse_memory_size("24 GiB").value(), int64_t{24} << 30);
    EXPECT_EQ(parse_memory_size("512MiB").value(), int64_t{512} << 20);
    EXPECT_EQ(parse_memory_size("1.5tb").value(), 1'500'000'000'000);
    EXPECT_NE(parse_memory_size("24 parsecs").status().message().find("unknown unit 'parsecs'"), std::string::npos);
    EXPECT_FALSE(parse_memory_size("lots").is_ok());
    EXPECT_FALSE(parse_memory_size("-3").is_ok());
    EXPECT_DOUBLE_EQ(parse_fraction("20%").value(), 0.2);
    EXPECT_DOUBLE_EQ(parse_fraction("0.1").value(), 0.1);
    EXPECT_FALSE(parse_fraction("1.5").is_ok());
    EXPECT_FALSE(parse_fraction("100%").is_ok());
    EXPECT_FALSE(parse_fraction("ten").is_ok());
}

TEST(Devices, PresetsHaveDatasheetFigures) {
    const DeviceSpec h200 = find_device("h200").value();
    EXPECT_EQ(h200.memory_bytes, int64_t{143771} << 20);
    EXPECT_DOUBLE_EQ(h200.bandwidth_bytes_per_s, 4.8e12);
    const DeviceSpec cpu = find_device("cpu").value();
    EXPECT_EQ(cpu.memory_bytes, int64_t{24} << 30);
    EXPECT_DOUBLE_EQ(cpu.bandwidth_bytes_per_s, 25.9e9);
    EXPECT_DOUBLE_EQ(cpu.int8_ops, 1509e9);
    for (const DeviceSpec& device : device_presets()) {
        EXPECT_GT(device.memory_bytes, 0) << device.name;
        EXPECT_GT(device.bandwidth_bytes_per_s, 0) << device.name;
        EXPECT_GT(device.int8_ops, device.fp16_flops) << device.name;
    }
    EXPECT_FALSE(find_device("tpu-v9").has_value());
}

TEST(Workload, LengthFileGivesPercentiles) {
    std::string text = "# input output\n";
    for (int idx = 1; idx <= 100; ++idx)
        text += std::to_string(idx * 10) + (idx % 2 ? " " : ",") + std::to_string(idx) + "\n";
    Workload workload;
    ASSERT_TRUE(read_length_file(write_temp("lengths.txt", text), &workload).is_ok());
    EXPECT_EQ(workload.lengths_source, "length file");
    EXPECT_DOUBLE_EQ(workload.input.mean, 505);
    EXPECT_DOUBLE_EQ(workload.input.p50, 500);
    EXPECT_DOUBLE_EQ(workload.input.p95, 950);
    EXPECT_DOUBLE_EQ(workload.output.p99, 99);
    ASSERT_TRUE(workload.total.has_value());
    EXPECT_DOUBLE_EQ(workload.total->p95, 1045);
}

TEST(Workload, BadLengthFilesNameTheLine) {
    Workload workload;
    const Status bad = read_length_file(write_temp("bad_lengths.txt", "10 5\n\n20 x\n"), &workload);
    EXPECT_NE(bad.message().find("bad_lengths.txt:3: expected \"INPUT_TOKENS OUTPUT_TOKENS\""), std::string::npos)
        << bad.message();
    EXPECT_FALSE(read_length_file(write_temp("three.txt", "1 2 3\n"), &workload).is_ok());
    EXPECT_FALSE(read_length_file(write_temp("negative.txt", "-1 2\n"), &workload).is_ok());
    EXPECT_NE(read_length_file(write_temp("empty.txt", "# nothing\n"), &workload).message().find("no request lengths"),
              std::string::npos);
    EXPECT_EQ(read_length_file("/nonexistent/lengths", &workload).code(), StatusCode::kNotFound);
}

TEST(Profile, ReadsTheMinimalSchemaInEveryShape) {
    const std::string one = R"({"concurrency": 8, "output_tokens_per_s": 50.5,
                                "ttft_ms": {"mean": 900, "p50": 850, "p99": 2000}, "tpot_ms": 140,
                                "input_tokens_mean": 64, "output_tokens_mean": 256})";
    const std::vector<ProfilePoint> single = parse_profile(one, "one").value();
    ASSERT_EQ(single.size(), 1u);
    EXPECT_DOUBLE_EQ(single[0].concurrency, 8);
    EXPECT_DOUBLE_EQ(single[0].output_tokens_per_s, 50.5);
    EXPECT_DOUBLE_EQ(*single[0].ttft_ms.p99, 2000);
    EXPECT_DOUBLE_EQ(*single[0].tpot_ms.mean, 140);
    EXPECT_DOUBLE_EQ(*single[0].input_tokens_mean, 64);
    EXPECT_EQ(parse_profile("[" + one + "," + one + "]", "list").value().size(), 2u);
    EXPECT_EQ(parse_profile(R"({"model": "x", "results": [)" + one + "]}", "results").value().size(), 1u);
    EXPECT_EQ(parse_profile(R"({"runs": [)" + one + "]}", "runs").value().size(), 1u);
}

// A key given twice is refused with the key named, not read as whichever value the parser keeps.
TEST(Profile, RepeatedKeysAreRefused) {
    const auto repeated = parse_profile(R"({"concurrency": 8, "concurrency": 16, "output_tokens_per_s": 50})", "p");
    ASSERT_FALSE(repeated.is_ok());
    EXPECT_NE(repeated.status().message().find("concurrency"), std::string::npos) << repeated.status().message();
}

TEST(Profile, ReadsVllmStyleFlatKeys) {
    const std::string vllm = R"({"max_concurrency": 16, "output_throughput": 27.3, "completed": 64,
                                 "total_input_tokens": 16384, "total_output_tokens": 8192,
                                 "mean_ttft_ms": 21400, "median_ttft_ms": 20300, "p99_ttft_ms": 41900,
                                 "median_tpot_ms": 429, "p99_tpot_ms": 570})";
    const ProfilePoint point = parse_profile(vllm, "vllm").value()[0];
    EXPECT_DOUBLE_EQ(point.concurrency, 16);
    EXPECT_DOUBLE_EQ(point.output_tokens_per_s, 27.3);
    EXPECT_DOUBLE_EQ(*point.input_tokens_mean, 256);
    EXPECT_DOUBLE_EQ(*point.output_tokens_mean, 128);
    EXPECT_DOUBLE_EQ(*point.ttft_ms.p50, 20300);
    EXPECT_DOUBLE_EQ(*point.tpot_ms.p99, 570);
    EXPECT_FALSE(point.tpot_ms.mean.has_value());
}

TEST(Profile, BadProfilesGiveClearErrors) {
    const auto error = [](const std::string& text) { return parse_profile(text, "p.json").status().message(); };
    EXPECT_NE(error("{oops").find("p.json: invalid JSON"), std::string::npos);
    EXPECT_NE(error(R"({"output_tokens_per_s": 5})").find("needs \"concurrency\""), std::string::npos);
    EXPECT_NE(error(R"({"concurrency": 4})").find("needs \"output_tokens_per_s\""), std::string::npos);
    EXPECT_NE(error(R"([{"concurrency": 4, "output_tokens_per_s": 5}, {"concurrency": 0, "output_tokens_per_s": 5}])")
                  .find("p.json: result 1: needs \"concurrency\""),
              std::string::npos);
    EXPECT_NE(error(R"({"concurrency": 4, "output_tokens_per_s": 5, "ttft_ms": "fast"})").find("\"ttft_ms\" must be"),
              std::string::npos);
    EXPECT_NE(error(R"({"concurrency": 4, "output_tokens_per_s": 5, "tpot_ms": -1})").find("negative time"),
              std::string::npos);
    EXPECT_NE(error("[]").find("holds no results"), std::string::npos);
    EXPECT_EQ(read_profile("/nonexistent/profile.json").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tern::plan
