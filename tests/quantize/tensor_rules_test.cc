// The per-tensor type rules: llama.cpp's Q4_K_M mix, the output matrix, 1-D tensors and row-size fallbacks.
#include "quantize/tensor_rules.h"

#include <gtest/gtest.h>

namespace tern {
namespace {

DType type_of(QuantPreset preset, const std::string& name, std::vector<int64_t> dims, int64_t num_layers = 32,
              bool has_output = true) {
    const std::optional<DType> type = choose_tensor_type(preset, name, dims, TensorRuleContext{num_layers, has_output});
    EXPECT_TRUE(type.has_value()) << name;
    return type.value_or(DType::kF32);
}

TEST(TensorRules, ParsesPresetNamesCaseInsensitively) {
    EXPECT_EQ(parse_quant_preset("q4_k_m"), QuantPreset::kQ4_K_M);
    EXPECT_EQ(parse_quant_preset("Q8_0"), QuantPreset::kQ8_0);
    EXPECT_FALSE(parse_quant_preset("q3_k").has_value());
    EXPECT_FALSE(parse_quant_preset("").has_value());
}

TEST(TensorRules, UseMoreBitsPicksFirstLastEighthAndEveryThird) {
    std::vector<int64_t> picked;
    for (int64_t layer = 0; layer < 32; ++layer) {
        if (use_more_bits(layer, 32)) picked.push_back(layer);
    }
    EXPECT_EQ(picked, (std::vector<int64_t>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}));
}

TEST(TensorRules, Q4KMRaisesAttnVAndFfnDownInSelectedLayers) {
    const QuantPreset preset = QuantPreset::kQ4_K_M;
    EXPECT_EQ(type_of(preset, "blk.0.attn_v.weight", {4096, 4096}), DType::kQ6_K);
    EXPECT_EQ(type_of(preset, "blk.4.attn_v.weight", {4096, 4096}), DType::kQ4_K);
    EXPECT_EQ(type_of(preset, "blk.6.ffn_down.weight", {11008, 4096}), DType::kQ6_K);
    EXPECT_EQ(type_of(preset, "blk.7.ffn_down.weight", {11008, 4096}), DType::kQ4_K);
    EXPECT_EQ(type_of(preset, "blk.0.attn_q.weight", {4096, 4096}), DType::kQ4_K);
    EXPECT_EQ(type_of(preset, "blk.0.ffn_up.weight", {4096, 11008}), DType::kQ4_K);
    EXPECT_EQ(type_of(preset, "token_embd.weight", {4096, 32000}), DType::kQ4_K);
    EXPECT_EQ(type_of(preset, "output.weight", {4096, 32000}), DType::kQ6_K);
}

TEST(TensorRules, OutputMatrixStaysQ6KExceptUnderQ8_0) {
    EXPECT_EQ(type_of(QuantPreset::kQ4_0, "output.weight", {4096, 32000}), DType::kQ6_K);
    EXPECT_EQ(type_of(QuantPreset::kQ5_K, "output.weight", {4096, 32000}), DType::kQ6_K);
    EXPECT_EQ(type_of(QuantPreset::kQ8_0, "output.weight", {4096, 32000}), DType::kQ8_0);
    // Tied embeddings: token_embd is the output matrix.
    EXPECT_EQ(type_of(QuantPreset::kQ4_0, "token_embd.weight", {4096, 32000}, 32, false), DType::kQ6_K);
    EXPECT_EQ(type_of(QuantPreset::kQ4_0, "token_embd.weight", {4096, 32000}, 32, true), DType::kQ4_0);
}

TEST(TensorRules, OneDimensionalAndNonWeightTensorsAreCopied) {
    EXPECT_FALSE(choose_tensor_type(QuantPreset::kQ4_0, "blk.0.attn_norm.weight", {4096}, {}).has_value());
    EXPECT_FALSE(choose_tensor_type(QuantPreset::kQ4_0, "blk.0.attn_q.bias", {4096}, {}).has_value());
    EXPECT_FALSE(choose_tensor_type(QuantPreset::kQ4_0, "rope_freqs.weight", {64}, {}).has_value());
}

TEST(TensorRules, RowsThatFitNoBlockFallBack) {
    // stories260K's ffn_down rows of 172 fit neither 32 nor 256.
    EXPECT_EQ(type_of(QuantPreset::kQ8_0, "blk.0.ffn_down.weight", {172, 64}), DType::kF16);
    EXPECT_EQ(type_of(QuantPreset::kQ4_0, "blk.0.ffn_down.weight", {172, 64}), DType::kF16);
    // Rows of 64 fit q4_0 but not the 256-element k-quant blocks.
    EXPECT_EQ(type_of(QuantPreset::kQ4_K, "blk.0.attn_q.weight", {64, 64}), DType::kQ5_0);
    EXPECT_EQ(type_of(QuantPreset::kQ5_K, "blk.0.attn_q.weight", {64, 64}), DType::kQ5_1);
    EXPECT_EQ(type_of(QuantPreset::kQ6_K, "blk.0.attn_q.weight", {64, 64}), DType::kQ8_0);
    EXPECT_EQ(type_of(QuantPreset::kQ4_0, "output.weight", {64, 512}), DType::kQ8_0);
}

}  // namespace
}  // namespace tern
