// tern's forward pass against an independent float64 implementation on synthetic models of each architecture
// variant: llama (adjacent-pair RoPE, separate output), qwen2 (q/k/v biases, half-split RoPE, tied embeddings),
// llama with llama3 RoPE scaling, the MoEs, phi3, gemma2/gemma3 and Mistral's sliding window; f32 and quantized
// weights; prompt split over several batches.
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/gguf.h"
#include "model/model.h"
#include "reference_forward.h"
#include "synth/synth.h"

namespace tern {
namespace {

struct ForwardCase {
    const char* preset;
    DType type;
    int64_t context = 0;  // the model's context_length option (LongRoPE's choice of factors); 0: the file's
};

class ReferenceForwardTest : public ::testing::TestWithParam<ForwardCase> {
protected:
    // Max |tern - reference| over every position's logits, and the largest |reference logit|.
    std::pair<double, double> compare(bool repack);
};

std::pair<double, double> ReferenceForwardTest::compare(bool repack) {
    const ForwardCase& param = GetParam();
    std::filesystem::create_directories(TERN_TEST_TMP);
    const std::string path = std::string(TERN_TEST_TMP) + "/ref_" + param.preset + "_" +
                             std::string(dtype_name(param.type)) + "_" + std::to_string(param.context) + ".gguf";
    ThreadPool pool(2);
    EXPECT_TRUE(write_synth_model(*find_preset(param.preset), SynthOptions{param.type, 5}, path, &pool).is_ok());
    auto loaded = Model::load(path, ModelOptions{repack, nullptr, param.context});
    EXPECT_TRUE(loaded.is_ok()) << loaded.status().message();
    if (!loaded.is_ok()) return {1e9, 0.0};
    Model& model = *loaded.value();

    // Past the tiny presets' sliding window of 8, so windows slide in both the 7-token batch and the decode steps.
    const std::vector<int32_t> tokens = {1, 300, 17, 999, 42, 512, 7, 8, 600, 3, 1000, 77, 5, 250, 901, 64};
    // The model has unmapped its file; the reference reads the file for itself.
    auto file = GgufFile::open(path);
    EXPECT_TRUE(file.is_ok()) << file.status().message();
    if (!file.is_ok()) return {1e9, 0.0};
    const std::vector<std::vector<double>> expected =
        testing::ReferenceForward(*file.value(), param.context).run(tokens);

    // Positions 0-6 in one batch, the rest one token at a time against the cache.
    KvCache cache(model.hparams(), 2, 16);
    std::vector<std::vector<float>> actual;
    TokenBatch batch;
    std::vector<float> logits;
    for (int32_t idx = 0; idx < 7; ++idx) batch.add(tokens[static_cast<size_t>(idx)], idx, 1, true);
    EXPECT_TRUE(model.forward(batch, &cache, &pool, &logits).is_ok());
    const int64_t vocab = model.hparams().vocab_size;
    for (int64_t idx = 0; idx < 7; ++idx) actual.emplace_back(logits.begin() + idx * vocab, logits.begin() + (idx + 1) * vocab);
    for (int32_t idx = 7; idx < static_cast<int32_t>(tokens.size()); ++idx) {
        batch.clear();
        batch.add(tokens[static_cast<size_t>(idx)], idx, 1, true);
        EXPECT_TRUE(model.forward(batch, &cache, &pool, &logits).is_ok());
        actual.push_back(logits);
    }

    double max_error = 0.0;
    double max_magnitude = 0.0;
    for (size_t position = 0; position < tokens.size(); ++position) {
        for (int64_t idx = 0; idx < vocab; ++idx) {
            max_error = std::max(max_error, std::abs(actual[position][static_cast<size_t>(idx)] -
                                                     expected[position][static_cast<size_t>(idx)]));
            max_magnitude = std::max(max_magnitude, std::abs(expected[position][static_cast<size_t>(idx)]));
        }
    }
    std::filesystem::remove(path);
    return {max_error, max_magnitude};
}

// With weights as stored (float activations throughout) the two implementations agree to float rounding.
TEST_P(ReferenceForwardTest, LogitsAgreeAtEveryPosition) {
    const auto [max_error, max_magnitude] = compare(/*repack=*/false);
    EXPECT_GT(max_magnitude, 0.01) << "logits too small to compare meaningfully";
    EXPECT_LT(max_error, 1e-4 * std::max(1.0, max_magnitude)) << "max |logit| " << max_magnitude;
}

// The int8 kernels quantize activations to 8 bits per 32-value block, as llama.cpp does: close, not equal.
TEST_P(ReferenceForwardTest, Int8KernelsStayClose) {
    const auto [max_error, max_magnitude] = compare(/*repack=*/true);
    EXPECT_LT(max_error, 3e-2 * std::max(1.0, max_magnitude)) << "max |logit| " << max_magnitude;
}

// The hidden states asked for (embeddings) are the reference's final normed states, whether or not the same token
// also wants logits; tokens that want neither are skipped without disturbing the others' rows.
TEST(ReferenceForwardHidden, HiddenStatesAgreeAndMixWithLogits) {
    std::filesystem::create_directories(TERN_TEST_TMP);
    const std::string path = std::string(TERN_TEST_TMP) + "/ref_hidden_tiny_f32.gguf";
    ThreadPool pool(2);
    ASSERT_TRUE(write_synth_model(*find_preset("tiny"), SynthOptions{DType::kF32, 5}, path, &pool).is_ok());
    auto loaded = Model::load(path, ModelOptions{false, nullptr});
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    Model& model = *loaded.value();
    const std::vector<int32_t> tokens = {1, 300, 17, 999, 42, 512, 7};
    auto file = GgufFile::open(path);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    const auto expected_hidden = testing::ReferenceForward(*file.value()).normed_hidden(tokens);
    const auto expected_logits = testing::ReferenceForward(*file.value()).run(tokens);

    KvCache cache(model.hparams(), 2, 16);
    TokenBatch batch;
    const bool wants_logits[] = {false, true, false, true, false, false, true};
    const bool wants_hidden[] = {true, true, false, false, true, true, true};
    for (int32_t idx = 0; idx < 7; ++idx) batch.add(tokens[idx], idx, 1, wants_logits[idx], wants_hidden[idx]);
    std::vector<float> logits, hidden;
    ASSERT_TRUE(model.forward(batch, &cache, &pool, &logits, &hidden).is_ok());
    const int64_t dim = model.hparams().embedding_dim, vocab = model.hparams().vocab_size;
    ASSERT_EQ(hidden.size(), static_cast<size_t>(5 * dim));
    ASSERT_EQ(logits.size(), static_cast<size_t>(3 * vocab));
    int64_t hidden_row = 0, logits_row = 0;
    for (size_t position = 0; position < tokens.size(); ++position) {
        for (int64_t idx = 0; wants_hidden[position] && idx < dim; ++idx) {
            EXPECT_NEAR(hidden[hidden_row * dim + idx], expected_hidden[position][idx], 1e-4) << position;
        }
        for (int64_t idx = 0; wants_logits[position] && idx < vocab; ++idx) {
            EXPECT_NEAR(logits[logits_row * vocab + idx], expected_logits[position][idx], 1e-3) << position;
        }
        hidden_row += wants_hidden[position];
        logits_row += wants_logits[position];
    }
    std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Architectures, ReferenceForwardTest,
                         ::testing::Values(ForwardCase{"tiny", DType::kF32}, ForwardCase{"tiny", DType::kQ4_K},
                                           ForwardCase{"tiny-qwen2", DType::kF32},
                                           ForwardCase{"tiny-qwen2", DType::kQ8_0},
                                           ForwardCase{"tiny-qwen3", DType::kF32},
                                           ForwardCase{"tiny-qwen3", DType::kQ8_0},
                                           ForwardCase{"tiny-qwen3moe", DType::kF32},
                                           ForwardCase{"tiny-qwen3moe", DType::kQ8_0},
                                           ForwardCase{"tiny-qwen2moe", DType::kF32},
                                           ForwardCase{"tiny-qwen2moe", DType::kQ8_0},
                                           ForwardCase{"tiny-phi3", DType::kF32},
                                           ForwardCase{"tiny-phi3", DType::kQ8_0},
                                           // Long factors (context 512 > 64), then short ones.
                                           ForwardCase{"tiny-phi3-128k", DType::kF32},
                                           ForwardCase{"tiny-phi3-128k", DType::kF32, 64},
                                           ForwardCase{"tiny-phi3-128k", DType::kQ8_0},
                                           ForwardCase{"tiny-gemma2", DType::kF32},
                                           ForwardCase{"tiny-gemma2", DType::kQ8_0},
                                           ForwardCase{"tiny-gemma3", DType::kF32},
                                           // Not a K-quant: unrepacked K-quant rows take 8-bit activations,
                                           // whose rounding Gemma's post-norms lift to the logits (1.4e-2).
                                           ForwardCase{"tiny-gemma3", DType::kQ4_0},
                                           ForwardCase{"tiny-mixtral", DType::kF32},
                                           ForwardCase{"tiny-mixtral", DType::kQ8_0},
                                           ForwardCase{"tiny-mistral", DType::kF32},
                                           ForwardCase{"tiny-llama3", DType::kF32},
                                           ForwardCase{"tiny-llama3", DType::kQ6_K}),
                         [](const auto& info) {
                             std::string name = std::string(info.param.preset) + "_" +
                                                std::string(dtype_name(info.param.type));
                             if (info.param.context > 0) name += "_context" + std::to_string(info.param.context);
                             for (char& c : name) if (c == '-') c = '_';
                             return name;
                         });

}  // namespace
}  // namespace tern
