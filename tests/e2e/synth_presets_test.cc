// Synthetic models in real shapes load, report their size and generate.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_command.h"

namespace tern {
namespace {

struct PresetCase {
    const char* preset;
    const char* type;
    double expected_billions;  // parameter count the real model has
    double tolerance;
};

class SynthPreset : public ::testing::TestWithParam<PresetCase> {};

TEST_P(SynthPreset, LoadsReportsSizeAndGenerates) {
    const PresetCase& param = GetParam();
    const std::string path = testing::temp_dir() + "/" + param.preset + "-" + param.type + ".gguf";
    const testing::CommandResult synth =
        testing::run_tern(std::string("synth --preset ") + param.preset + " --type " + param.type + " -o " + path);
    ASSERT_EQ(synth.exit_code, 0) << synth.err;

    const testing::CommandResult info = testing::run_tern("info --json -m " + path);
    ASSERT_EQ(info.exit_code, 0) << info.err;
    const nlohmann::json report = nlohmann::json::parse(info.out);
    EXPECT_NEAR(report["num_params"].get<double>() / 1e9, param.expected_billions, param.tolerance);

    const auto generate = [&] {
        const testing::CommandResult result =
            testing::run_tern("generate --json --ignore-eos -n 4 --seed 3 -m " + path + " -p 'Hello world'");
        EXPECT_EQ(result.exit_code, 0) << result.err;
        return nlohmann::json::parse(result.out);
    };
    const nlohmann::json first = generate();
    EXPECT_EQ(first["tokens"].size(), 4u);
    EXPECT_EQ(first["tokens"], generate()["tokens"]);
    std::filesystem::remove(path);
}

std::string case_name(const ::testing::TestParamInfo<PresetCase>& info) {
    std::string name = std::string(info.param.preset) + "_" + info.param.type;
    for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    return name;
}

INSTANTIATE_TEST_SUITE_P(Tiny, SynthPreset,
                         ::testing::Values(PresetCase{"tiny", "f32", 0.00105, 0.0005},
                                           PresetCase{"tiny", "q8_0", 0.00105, 0.0005},
                                           PresetCase{"tiny", "q4_0", 0.00105, 0.0005},
                                           PresetCase{"tiny", "q4_K", 0.00105, 0.0005},
                                           PresetCase{"tiny", "q6_K", 0.00105, 0.0005},
                                           PresetCase{"tiny", "f16", 0.00105, 0.0005},
                                           PresetCase{"tiny-qwen2", "q8_0", 0.00092, 0.0005}),
                         case_name);
INSTANTIATE_TEST_SUITE_P(RealShapes, SynthPreset,
                         ::testing::Values(PresetCase{"qwen2.5-0.5b", "q8_0", 0.49, 0.01},
                                           PresetCase{"tinyllama-1.1b", "q4_0", 1.1, 0.02}),
                         case_name);

}  // namespace
}  // namespace tern
