// tern doctor's reading of the machine (fake /proc and /sys files), its arithmetic (decode speed from bandwidth,
// contexts that fit) and its warnings, each with a fix; and the command end to end on a synthetic model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "doctor/advice.h"
#include "e2e/run_command.h"

namespace tern::doctor {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(Doctor, SelectedModeIsTheBracketedOne) {
    EXPECT_EQ(selected_mode("always [madvise] never"), "madvise");
    EXPECT_EQ(selected_mode("[always] madvise never\n"), "always");
    EXPECT_EQ(selected_mode("garbage"), "");
}

TEST(Doctor, ReadsTheMachineFromItsFiles) {
    const fs::path dir = fs::path(::testing::TempDir()) / ("doctor_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "cpuinfo") << "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B45\n";
    std::ofstream(dir / "loadavg") << "1.50 0.75 0.25 2/300 12345\n";
    std::ofstream(dir / "thp") << "always madvise [never]\n";
    std::ofstream(dir / "meminfo") << "MemAvailable: 8388608 kB\n";
    MachineSources sources;
    sources.cpuinfo = (dir / "cpuinfo").string();
    sources.loadavg = (dir / "loadavg").string();
    sources.transparent_hugepage = (dir / "thp").string();
    sources.memory = {(dir / "meminfo").string(), (dir / "none").string(), (dir / "none").string()};
    const MachineFacts facts = read_machine_facts(sources);
    EXPECT_EQ(facts.cpu_model, "AMD EPYC 9B45");
    EXPECT_EQ(facts.load_average, 1.5);
    EXPECT_EQ(facts.transparent_hugepage, "never");
    EXPECT_EQ(facts.memory.bytes(), 8 * kGiB);
    EXPECT_GE(facts.usable_cores, 1);
    EXPECT_FALSE(facts.kernels.empty());
    fs::remove_all(dir);
}

ModelNeeds tinyllama_like() {
    return {"m.gguf", 600'000'000, 600'000'000, 22528, 2048};  // TinyLlama Q4_0's bytes, f16 KV
}

TEST(Doctor, OutlookIsBandwidthOverBytesAndContextsOverMemory) {
    const ModelOutlook out = outlook(tinyllama_like(), 30e9, 10 * kGiB);
    EXPECT_DOUBLE_EQ(out.decode_tokens_per_s, 50.0);
    const double context_bytes = 22528.0 * 2048.0;
    EXPECT_EQ(out.contexts_at_default_budget, static_cast<int64_t>(0.4 * 10 * kGiB / context_bytes));
    EXPECT_EQ(out.contexts_at_most, static_cast<int64_t>((10.0 * kGiB - 600e6) / context_bytes));
}

TEST(Doctor, WarningsSayWhatToChange) {
    MachineFacts facts;
    facts.usable_cores = 2;
    facts.transparent_hugepage = "madvise";
    facts.memory.host_available = 10 * kGiB;
    EXPECT_TRUE(warnings_for(facts, std::nullopt, std::nullopt).empty());

    facts.transparent_hugepage = "never";
    facts.load_average = 1.8;
    std::vector<Warning> warnings = warnings_for(facts, std::nullopt, std::nullopt);
    ASSERT_EQ(warnings.size(), 2u);
    EXPECT_NE(warnings[0].fix.find("transparent_hugepage/enabled"), std::string::npos);
    EXPECT_NE(warnings[1].problem.find("load average 1.80 on 2 usable cores"), std::string::npos);

    facts = MachineFacts{};
    facts.memory.host_available = 512 << 20;  // less than the weights
    ModelNeeds needs = tinyllama_like();
    warnings = warnings_for(facts, needs, outlook(needs, 30e9, facts.memory.bytes()));
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].problem.find("needs 0.56 GiB for its weights; 0.50 GiB is available"), std::string::npos);

    facts.memory.host_available = 1 * kGiB;  // the weights fit, a full 128k context does not
    needs.context_length = 131072;
    warnings = warnings_for(facts, needs, outlook(needs, 30e9, facts.memory.bytes()));
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].fix.find("--max-model-len"), std::string::npos) << warnings[0].fix;
}

TEST(DoctorCommand, JsonReportOnASyntheticModel) {
    const std::string path = testing::temp_dir() + "/doctor-tiny.gguf";
    ASSERT_EQ(testing::run_tern("synth --preset tiny --type q8_0 -o " + path).exit_code, 0);
    const testing::CommandResult result = testing::run_tern("doctor --json -t 1 -m " + path);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const nlohmann::json report = nlohmann::json::parse(result.out);
    EXPECT_GT(report["read_gb_per_s"].get<double>(), 0.0);
    EXPECT_FALSE(report["machine"]["cpu"].get<std::string>().empty());
    const nlohmann::json& model = report["model"];
    EXPECT_GT(model["decode_bytes_per_token"].get<int64_t>(), 0);
    EXPECT_NEAR(model["predicted_decode_tokens_per_s"].get<double>(),
                report["read_gb_per_s"].get<double>() * 1e9 / model["decode_bytes_per_token"].get<double>(), 1e-6);
    EXPECT_EQ(model["smoke"]["ok"], true) << model["smoke"].dump();
    EXPECT_EQ(model["smoke"]["tokens"], 8);
    EXPECT_TRUE(report["warnings"].is_array());
    const testing::CommandResult missing = testing::run_tern("doctor -m /nonexistent.gguf");
    EXPECT_NE(missing.exit_code, 0);
    EXPECT_NE(missing.err.find("/nonexistent.gguf"), std::string::npos) << missing.err;
    std::filesystem::remove(path);
}

// tern plan --device local plans with this machine's figures measured now, not a preset's.
TEST(DoctorCommand, PlanOnTheLocalDeviceMeasuresIt) {
    const testing::CommandResult result =
        testing::run_tern("plan --model tinyllama-1.1b --weight-type q4_0 --device local --json");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const nlohmann::json device = nlohmann::json::parse(result.out)["device"];
    EXPECT_EQ(device["name"], "local");
    EXPECT_GT(device["memory_bytes"].get<double>(), 0.0);
    EXPECT_GT(device["bandwidth_bytes_per_s"].get<double>(), 1e8);
    EXPECT_NE(device["description"].get<std::string>().find("measured now"), std::string::npos);
}

}  // namespace
}  // namespace tern::doctor
