// Model loading refuses files that do not describe a complete model of a supported architecture, naming what is
// wrong.
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/gguf_writer.h"
#include "model/model.h"

namespace tern {
namespace {

std::string write_temp(const GgufWriter& writer, const std::string& name) {
    std::filesystem::create_directories(TERN_TEST_TMP);
    const std::string path = std::string(TERN_TEST_TMP) + "/" + name;
    EXPECT_TRUE(writer.write(path).is_ok());
    return path;
}

GgufWriter minimal_llama_metadata(const std::string& arch) {
    GgufWriter writer;
    writer.add_string("general.architecture", arch);
    writer.add_u32(arch + ".context_length", 64);
    writer.add_u32(arch + ".embedding_length", 32);
    writer.add_u32(arch + ".block_count", 1);
    writer.add_u32(arch + ".feed_forward_length", 64);
    writer.add_u32(arch + ".attention.head_count", 4);
    writer.add_u32(arch + ".attention.head_count_kv", 2);
    return writer;
}

void add_f32(GgufWriter& writer, const std::string& name, std::vector<int64_t> dims) {
    writer.add_tensor(name, DType::kF32, dims, [](uint8_t*) {});
}

TEST(ModelLoad, UnsupportedArchitectureIsNamed) {
    const std::string path = write_temp(minimal_llama_metadata("mamba"), "mamba.gguf");
    auto model = Model::load(path);
    ASSERT_FALSE(model.is_ok());
    EXPECT_NE(model.status().message().find("architecture 'mamba' is not supported"), std::string::npos)
        << model.status().message();
}

TEST(ModelLoad, MissingTensorIsNamed) {
    GgufWriter writer = minimal_llama_metadata("llama");
    add_f32(writer, "token_embd.weight", {32, 10});
    add_f32(writer, "output_norm.weight", {32});
    add_f32(writer, "blk.0.attn_norm.weight", {32});
    const std::string path = write_temp(writer, "missing.gguf");
    auto model = Model::load(path);
    ASSERT_FALSE(model.is_ok());
    EXPECT_NE(model.status().message().find("missing tensor 'blk.0.attn_q.weight'"), std::string::npos)
        << model.status().message();
}

TEST(ModelLoad, WrongShapeIsNamed) {
    GgufWriter writer = minimal_llama_metadata("llama");
    add_f32(writer, "token_embd.weight", {32, 10});
    add_f32(writer, "output_norm.weight", {32});
    add_f32(writer, "blk.0.attn_norm.weight", {32});
    add_f32(writer, "blk.0.attn_q.weight", {32, 16});
    const std::string path = write_temp(writer, "shape.gguf");
    auto model = Model::load(path);
    ASSERT_FALSE(model.is_ok());
    EXPECT_NE(model.status().message().find("'blk.0.attn_q.weight' has shape [32, 16], expected [32, 32]"),
              std::string::npos) << model.status().message();
}

TEST(ModelLoad, MissingHyperParameterIsNamed) {
    GgufWriter writer;
    writer.add_string("general.architecture", "qwen2");
    const std::string path = write_temp(writer, "nohp.gguf");
    auto model = Model::load(path);
    ASSERT_FALSE(model.is_ok());
    EXPECT_NE(model.status().message().find("qwen2.context_length"), std::string::npos) << model.status().message();
}

// The embedding, output norm and layer 0's attention of minimal_llama_metadata's shapes.
void add_embedding_and_attention(GgufWriter& writer) {
    add_f32(writer, "token_embd.weight", {32, 10});
    add_f32(writer, "output_norm.weight", {32});
    add_f32(writer, "blk.0.attn_norm.weight", {32});
    add_f32(writer, "blk.0.attn_q.weight", {32, 32});
    add_f32(writer, "blk.0.attn_k.weight", {32, 16});
    add_f32(writer, "blk.0.attn_v.weight", {32, 16});
    add_f32(writer, "blk.0.attn_output.weight", {32, 32});
}

// Gemma's post-norms are required tensors; a sliding-window pattern longer than the model is refused.
TEST(ModelLoad, GemmaPostNormAndWindowPatternAreChecked) {
    GgufWriter writer = minimal_llama_metadata("gemma2");
    writer.add_u32("gemma2.attention.sliding_window", 16);
    add_embedding_and_attention(writer);
    add_f32(writer, "blk.0.ffn_norm.weight", {32});
    add_f32(writer, "blk.0.post_attention_norm.weight", {32});
    auto model = Model::load(write_temp(writer, "gemma2-no-post-norm.gguf"));
    ASSERT_FALSE(model.is_ok());
    EXPECT_NE(model.status().message().find("missing tensor 'blk.0.post_ffw_norm.weight'"), std::string::npos)
        << model.status().message();

    GgufWriter pattern = minimal_llama_metadata("gemma3");
    pattern.add_u32("gemma3.attention.sliding_window", 16);
    pattern.add_u32("gemma3.attention.sliding_window_pattern", 7);
    model = Model::load(write_temp(pattern, "gemma3-pattern.gguf"));
    ASSERT_FALSE(model.is_ok());
    EXPECT_NE(model.status().message().find("sliding_window_pattern is 7; it must be in [0, 1]"), std::string::npos)
        << model.status().message();
}

// LongRoPE (Phi-3 128k): both factor lists must be there, head_dim / 2 long and positive; the attention factor sane.
TEST(ModelLoad, LongRopeFactorsAreChecked) {
    const auto message = [](const std::vector<std::pair<std::string, int64_t>>& factors, float attn_factor,
                            const std::string& name) {
        GgufWriter writer = minimal_llama_metadata("phi3");
        writer.add_u32("phi3.rope.scaling.original_context_length", 16);
        writer.add_f32("phi3.rope.scaling.attn_factor", attn_factor);
        add_f32(writer, "token_embd.weight", {32, 10});
        add_f32(writer, "output_norm.weight", {32});
        for (const auto& [tensor, length] : factors) add_f32(writer, tensor, {length});
        auto model = Model::load(write_temp(writer, name));
        return model.is_ok() ? std::string("loaded") : model.status().message();
    };
    // head_dim 8: four rotation pairs.
    EXPECT_NE(message({{"rope_factors_long.weight", 4}}, 1.2f, "longrope-one.gguf")
                  .find("missing tensor 'rope_factors_short.weight'"), std::string::npos);
    EXPECT_NE(message({{"rope_factors_long.weight", 4}, {"rope_factors_short.weight", 3}}, 1.2f, "longrope-shape.gguf")
                  .find("'rope_factors_short.weight' has shape [3], expected [4]"), std::string::npos);
    // The writer leaves the data zero: a divisor of 0 would make infinite frequencies.
    EXPECT_NE(message({{"rope_factors_long.weight", 4}, {"rope_factors_short.weight", 4}}, 1.2f, "longrope-zero.gguf")
                  .find("tensor 'rope_factors_long.weight' holds 0; RoPE factors must be positive"), std::string::npos);
    EXPECT_NE(message({}, -1.0f, "longrope-attn.gguf").find("attn_factor is -1; it must be in (0, 100)"),
              std::string::npos);
}

// A mixture of experts: the expert keys must agree with each other and with the 3-D expert tensors.
GgufWriter moe_file(int64_t experts, int64_t used, std::vector<int64_t> down_dims) {
    GgufWriter writer = minimal_llama_metadata("qwen3moe");
    writer.add_u32("qwen3moe.expert_count", static_cast<uint32_t>(experts));
    writer.add_u32("qwen3moe.expert_used_count", static_cast<uint32_t>(used));
    writer.add_u32("qwen3moe.expert_feed_forward_length", 16);
    add_embedding_and_attention(writer);
    add_f32(writer, "blk.0.attn_q_norm.weight", {8});
    add_f32(writer, "blk.0.attn_k_norm.weight", {8});
    add_f32(writer, "blk.0.ffn_norm.weight", {32});
    add_f32(writer, "blk.0.ffn_gate_inp.weight", {32, 4});
    add_f32(writer, "blk.0.ffn_gate_exps.weight", {32, 16, 4});
    add_f32(writer, "blk.0.ffn_up_exps.weight", {32, 16, 4});
    if (!down_dims.empty()) add_f32(writer, "blk.0.ffn_down_exps.weight", down_dims);
    return writer;
}

TEST(ModelLoad, ExpertTensorsAndCountsAreChecked) {
    const auto message = [](const GgufWriter& writer, const std::string& name) {
        auto model = Model::load(write_temp(writer, name));
        return model.is_ok() ? std::string("loaded") : model.status().message();
    };
    EXPECT_EQ(message(moe_file(4, 2, {16, 32, 4}), "moe-good.gguf"), "loaded");
    EXPECT_NE(message(moe_file(4, 2, {}), "moe-missing.gguf").find("missing tensor 'blk.0.ffn_down_exps.weight'"),
              std::string::npos);
    const std::string misshapen = message(moe_file(4, 2, {16, 32, 3}), "moe-shape.gguf");
    EXPECT_NE(misshapen.find("'blk.0.ffn_down_exps.weight' has shape [16, 32, 3], expected [16, 32, 4] (4 experts)"),
              std::string::npos) << misshapen;
    const std::string counts = message(moe_file(4, 6, {16, 32, 4}), "moe-count.gguf");
    EXPECT_NE(counts.find("uses 6 of 4 experts"), std::string::npos) << counts;
    // The file says 8 experts, its tensors hold 4.
    EXPECT_NE(message(moe_file(8, 2, {16, 32, 4}), "moe-contradiction.gguf").find("expected [32, 8]"),
              std::string::npos);
}

}  // namespace
}  // namespace tern
