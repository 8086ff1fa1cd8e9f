// The CLI as a user drives it: help, generate (greedy golden and seeded sampling), tokenize, bad flags.
#include <gtest/gtest.h>

#include <cstdlib>

#include <fstream>
#include <nlohmann/json.hpp>

#include "run_command.h"

namespace tern {
namespace {

const std::string kStoriesDir = std::string(TERN_SHARED_DIR) + "/models/stories260K";
const std::string kStories = kStoriesDir + "/stories260K-f32.gguf";

nlohmann::json reference() {
    std::ifstream stream(kStoriesDir + "/reference.json");
    return nlohmann::json::parse(stream);
}

TEST(Cli, HelpForEveryCommand) {
    const testing::CommandResult root = testing::run_tern("--help");
    EXPECT_EQ(root.exit_code, 0);
    for (const char* command : {"generate", "tokenize", "info", "synth"}) {
        EXPECT_NE(root.out.find(command), std::string::npos) << command;
        const testing::CommandResult help = testing::run_tern(std::string(command) + " --help");
        EXPECT_EQ(help.exit_code, 0) << command;
        EXPECT_NE(help.out.find("--"), std::string::npos) << command;
    }
    EXPECT_NE(testing::run_tern("frobnicate").exit_code, 0);
}

TEST(Cli, GreedyGenerateMatchesReference) {
    const nlohmann::json expected = reference();  // held: a range over reference()["prompts"] outlived its json
    for (const nlohmann::json& prompt : expected["prompts"]) {
        const testing::CommandResult result = testing::run_tern(
            "generate --json --temp 0 -n 32 -m " + kStories + " -p '" + prompt["text"].get<std::string>() + "'");
        ASSERT_EQ(result.exit_code, 0) << result.err;
        const nlohmann::json output = nlohmann::json::parse(result.out);
        EXPECT_EQ(output["prompt_tokens"], prompt["prompt_tokens"]);
        EXPECT_EQ(output["tokens"], prompt["greedy_tokens"]);
        // The continuation as printed (" was" after "The little dog"), not SentencePiece's decode of the generated
        // tokens alone (greedy_text, which drops that first space): prompt and text make the full text.
        EXPECT_EQ(prompt["text"].get<std::string>() + output["text"].get<std::string>(), prompt["full_text"]);
        EXPECT_GT(output["timings"]["decode_tokens_per_s"].get<double>(), 0.0);
    }
}

TEST(Cli, SeededSamplingIsReproducible) {
    const auto run = [](int seed) {
        const testing::CommandResult result = testing::run_tern(
            "generate --json --temp 1 --top-k 40 --top-p 0.95 -n 24 --seed " + std::to_string(seed) + " -m " +
            kStories + " -p 'Once upon a time'");
        EXPECT_EQ(result.exit_code, 0) << result.err;
        return nlohmann::json::parse(result.out)["tokens"].get<std::vector<int>>();
    };
    const std::vector<int> first = run(7);
    EXPECT_EQ(first, run(7));
    EXPECT_TRUE(run(8) != first || run(9) != first);
}

TEST(Cli, TokenizeTextAndFileBytes) {
    const testing::CommandResult plain = testing::run_tern("tokenize -m " + kStories + " 'Once upon a time'");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.out, "403 407 261 378\n");
    const testing::CommandResult with_bos = testing::run_tern("tokenize --add-bos -m " + kStories + " 'Once upon a time'");
    EXPECT_EQ(with_bos.out, "1 403 407 261 378\n");
    const std::string path = testing::temp_dir() + "/prompt.txt";
    std::ofstream(path, std::ios::binary) << "Once upon a time\n";
    const testing::CommandResult from_file = testing::run_tern("tokenize -m " + kStories + " --file " + path);
    ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
    EXPECT_EQ(from_file.out.rfind("403 407 261 378 ", 0), 0u) << "the final newline is kept: " << from_file.out;
}

TEST(Cli, BadValuesGiveOneErrorLine) {
    const testing::CommandResult bad_top_p =
        testing::run_tern("generate -m " + kStories + " -p hi --top-p 1.5");
    EXPECT_EQ(bad_top_p.exit_code, 1);
    EXPECT_NE(bad_top_p.err.find("top_p"), std::string::npos) << bad_top_p.err;
    const testing::CommandResult bad_preset = testing::run_tern("synth --preset nope -o /tmp/x.gguf");
    EXPECT_EQ(bad_preset.exit_code, 1);
    EXPECT_NE(bad_preset.err.find("unknown preset 'nope'"), std::string::npos) << bad_preset.err;
    const testing::CommandResult no_experts = testing::run_tern("synth --preset tiny --experts 4 -o /tmp/x.gguf");
    EXPECT_EQ(no_experts.exit_code, 1);
    EXPECT_NE(no_experts.err.find("preset 'tiny' has no experts"), std::string::npos) << no_experts.err;
    const testing::CommandResult missing = testing::run_tern("generate -p hi");
    EXPECT_NE(missing.exit_code, 0);
    EXPECT_NE(missing.err.find("--model"), std::string::npos) << missing.err;
    const testing::CommandResult bad_budget = testing::run_tern("serve -m " + kStories + " --max-batched-tokens lots");
    EXPECT_EQ(bad_budget.exit_code, 1);
    EXPECT_NE(bad_budget.err.find("--max-batched-tokens must be a number of tokens >= 1 or auto, not 'lots'"),
              std::string::npos) << bad_budget.err;
    const testing::CommandResult no_method = testing::run_tern("serve -m " + kStories + " --num-speculative-tokens 3");
    EXPECT_EQ(no_method.exit_code, 1);
    EXPECT_NE(no_method.err.find("--num-speculative-tokens needs a drafting method: add --spec-ngram"),
              std::string::npos) << no_method.err;
    const testing::CommandResult two_methods =
        testing::run_tern("serve -m " + kStories + " --spec-ngram --draft-model " + kStories);
    EXPECT_EQ(two_methods.exit_code, 1);
    EXPECT_NE(two_methods.err.find("two drafting methods: choose one"), std::string::npos) << two_methods.err;
    const std::string other_vocab = std::string(TERN_TEST_TMP) + "/cli-draft-vocab-600.gguf";
    ASSERT_EQ(testing::run_tern("synth --preset tiny --vocab-size 600 -o " + other_vocab).exit_code, 0);
    const testing::CommandResult wrong_vocab = testing::run_tern("serve -m " + kStories + " --draft-model " + other_vocab);
    EXPECT_EQ(wrong_vocab.exit_code, 1);
    EXPECT_NE(wrong_vocab.err.find("the draft model has 600 tokens in its vocabulary, the target 512"),
              std::string::npos) << wrong_vocab.err;
    const testing::CommandResult bad_ngram = testing::run_tern("serve -m " + kStories + " --spec-ngram --spec-ngram-min 0");
    EXPECT_EQ(bad_ngram.exit_code, 1);
    EXPECT_NE(bad_ngram.err.find("1 <= --spec-ngram-min <= --spec-ngram-max"), std::string::npos) << bad_ngram.err;
    // Every command that takes -t checks the same range, before it opens anything.
    for (const char* command : {"serve -m ", "bench engine -m ", "bench model -m ", "generate -p hi -m "}) {
        const testing::CommandResult bad_threads = testing::run_tern(std::string(command) + kStories + " -t 0");
        EXPECT_NE(bad_threads.exit_code, 0) << command;
        EXPECT_NE((bad_threads.out + bad_threads.err).find("--threads: Value 0 not in range 1 to 512"), std::string::npos)
            << command << bad_threads.err;
    }
}

// -d runs each test after that many cached positions (llama-bench's depth), reported in the JSON with the KV type.
// --peak: batched decode's matrix work (q, k, v, o, gate, up, down per layer and the output; stories260K: 64 wide,
// 5 layers, 8 / 4 heads of 8, FFN 172, vocab 512) against the int8 peak measured in the same run.
TEST(Cli, BenchModelPeakShare) {
    const testing::CommandResult result = testing::run_tern("bench model -m " + kStories + " -p 0 -n 4 -r 1 -b 2 --peak --json");
    if (result.exit_code != 0 && result.err.find("no peak probes") != std::string::npos) {
        GTEST_SKIP() << "no AVX-512 peak probes on this CPU";
    }
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const nlohmann::json report = nlohmann::json::parse(result.out);
    const int64_t per_layer = 64 * (2 * 64 + 2 * 32 + 3 * 172);
    EXPECT_DOUBLE_EQ(report["matmul_gop_per_token"].get<double>(), 2.0 * (5 * per_layer + 64 * 512) / 1e9);
    const double peak = report["int8_peak_gops"].get<double>();
    EXPECT_GT(peak, 0.0);
    const nlohmann::json& row = report["batched"][0];
    EXPECT_DOUBLE_EQ(row["matmul_gops"].get<double>(),
                     row["tokens_per_s"].get<double>() * report["matmul_gop_per_token"].get<double>());
    EXPECT_DOUBLE_EQ(row["peak_fraction"].get<double>(), row["matmul_gops"].get<double>() / peak);
}

TEST(Cli, BenchModelAtDepth) {
    const testing::CommandResult result =
        testing::run_tern("bench model -m " + kStories + " -p 8 -n 4 -r 1 -b 2 -d 20 -t 1 --json");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const nlohmann::json report = nlohmann::json::parse(result.out);
    EXPECT_EQ(report["depth"], 20);
    EXPECT_EQ(report["kv_cache_type"], "f16");
    EXPECT_GT(report["pp_tokens_per_s"].get<double>(), 0.0);
    EXPECT_GT(report["tg_tokens_per_s"].get<double>(), 0.0);
    EXPECT_GT(report["batched"][0]["tokens_per_s"].get<double>(), 0.0);
    const testing::CommandResult table = testing::run_tern("bench model -m " + kStories + " -p 8 -n 4 -r 1 -d 20 -t 1");
    EXPECT_NE(table.out.find("| tg4 @ d20 |"), std::string::npos) << table.out;

    const testing::CommandResult too_deep = testing::run_tern("bench model -m " + kStories + " -p 8 -n 4 -r 1 -d 600");
    EXPECT_EQ(too_deep.exit_code, 1);
    EXPECT_NE(too_deep.err.find("the depth must be in [0, 504]"), std::string::npos) << too_deep.err;
    const testing::CommandResult bad_type =
        testing::run_tern("bench model -m " + kStories + " -p 8 -n 4 -r 1 --kv-cache-type q9");
    EXPECT_EQ(bad_type.exit_code, 1);
    EXPECT_NE(bad_type.err.find("unknown KV cache type 'q9'; use f16, q8_0 or f32"), std::string::npos) << bad_type.err;
    const testing::CommandResult q8_heads =
        testing::run_tern("bench model -m " + kStories + " -p 8 -n 4 -r 1 --kv-cache-type q8_0");
    EXPECT_EQ(q8_heads.exit_code, 1);
    EXPECT_NE(q8_heads.err.find("a q8_0 KV cache needs a head size that is a multiple of 32"), std::string::npos)
        << q8_heads.err;
}

// The compute probes exist only in the AVX-512 table: with another one forced, the command says so and fails.
TEST(Cli, BenchComputeWithoutProbesSaysWhich) {
    ::setenv("TERN_ISA", "ref", 1);
    const testing::CommandResult result = testing::run_tern("bench compute -t 1");
    const testing::CommandResult peak = testing::run_tern("bench model -m " + kStories + " -p 0 -n 2 -r 1 -b 2 --peak");
    ::unsetenv("TERN_ISA");
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("the ref kernels have no peak probes"), std::string::npos) << result.err;
    EXPECT_EQ(peak.exit_code, 1);  // bench model --peak measures the same peak
    EXPECT_NE(peak.err.find("the ref kernels have no peak probes"), std::string::npos) << peak.err;
}

}  // namespace
}  // namespace tern
