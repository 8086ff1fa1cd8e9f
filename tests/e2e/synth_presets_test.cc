// Synthetic models in real shapes load, report their size and generate.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

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

// Phi-3 128k's LongRoPE: `tern info` names it, and `tern generate -c` sets the context the factors are chosen by
// (a prompt longer than it is refused).
TEST(SynthLongRope, InfoNamesItAndGenerateTakesAContext) {
    const std::string path = testing::temp_dir() + "/tiny-phi3-128k.gguf";
    ASSERT_EQ(testing::run_tern("synth --preset tiny-phi3-128k --type q8_0 -o " + path).exit_code, 0);
    const testing::CommandResult info = testing::run_tern("info --json -m " + path);
    ASSERT_EQ(info.exit_code, 0) << info.err;
    const nlohmann::json scaling = nlohmann::json::parse(info.out)["hparams"]["rope_scaling"];
    EXPECT_EQ(scaling["type"], "longrope");
    EXPECT_EQ(scaling["original_context"], 64);
    EXPECT_NEAR(scaling["attention_factor"].get<double>(), std::sqrt(1.0 + std::log(8.0) / std::log(64.0)), 1e-6);
    for (const char* context : {"32", "64", "512"}) {
        const testing::CommandResult result =
            testing::run_tern(std::string("generate --json --ignore-eos -n 8 -c ") + context + " -m " + path +
                              " -p 'Hello world'");
        EXPECT_EQ(result.exit_code, 0) << result.err;
        EXPECT_LE(nlohmann::json::parse(result.out)["tokens"].size(), 8u);
    }
    const testing::CommandResult too_long = testing::run_tern("generate -n 8 -c 2 -m " + path + " -p 'Hello world'");
    EXPECT_NE(too_long.exit_code, 0);
    EXPECT_NE(too_long.err.find("but the context holds 2"), std::string::npos) << too_long.err;
    std::filesystem::remove(path);
}

// --successor-gain: each token mostly decides the next, so a prompt with other text before the same last words goes
// on the same way, and a 4-bit copy decodes the same tokens (what makes it a draft model to measure speculative
// decoding with); a plain random model's continuation depends on the whole prompt. A preset whose output matrix is
// its embeddings is refused with the reason.
TEST(SynthSuccessorGain, TheLastTokenDecidesAndAFourBitCopyAgrees) {
    const std::string dir = testing::temp_dir();
    const auto synth = [&](const std::string& name, const std::string& flags) {
        const std::string path = dir + "/" + name + ".gguf";
        const testing::CommandResult result = testing::run_tern("synth --preset tiny -o " + path + " " + flags);
        EXPECT_EQ(result.exit_code, 0) << result.err;
        return path;
    };
    const auto generate = [](const std::string& path, const std::string& prompt) {
        const testing::CommandResult result =
            testing::run_tern("generate --json --ignore-eos --temp 0 -n 24 -m " + path + " -p '" + prompt + "'");
        EXPECT_EQ(result.exit_code, 0) << result.err;
        return nlohmann::json::parse(result.out)["tokens"];
    };
    const std::string gained = synth("successor", "--type f32 --successor-gain 200");
    const std::string gained_q4 = synth("successor-q4", "--type q4_0 --successor-gain 200");
    const std::string plain = synth("plain", "--type f32");
    const std::string prompt = "Hello world";
    const std::string longer = "A quite different start. Hello world";
    EXPECT_EQ(generate(gained, prompt), generate(gained, longer));
    EXPECT_NE(generate(plain, prompt), generate(plain, longer));
    EXPECT_EQ(generate(gained, longer), generate(gained_q4, longer));

    const testing::CommandResult tied =
        testing::run_tern("synth --preset tiny-qwen2 --successor-gain 8 -o " + dir + "/tied.gguf");
    EXPECT_NE(tied.exit_code, 0);
    EXPECT_NE(tied.err.find("own output matrix"), std::string::npos) << tied.err;
    for (const char* name : {"successor", "successor-q4", "plain"}) std::filesystem::remove(dir + "/" + name + ".gguf");
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
