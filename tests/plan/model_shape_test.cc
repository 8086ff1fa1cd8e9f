// Model shapes from presets, GGUF metadata and config.json, and the errors bad inputs give.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/thread_pool.h"
#include "formats/gguf_writer.h"
#include "plan/model_shape.h"
#include "plan/weight_footprint.h"
#include "synth/synth.h"

namespace tern::plan {
namespace {

std::string temp_path(const std::string& name) {
    std::filesystem::create_directories(TERN_TEST_TMP);
    return std::string(TERN_TEST_TMP) + "/plan_" + name;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

constexpr const char* kLlama3Config = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
  "max_position_embeddings": 8192, "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16"
})";

TEST(ModelShape, PresetsCarryRealShapes) {
    const ModelShape llama70 = model_shape_from_preset("llama3-70b").value();
    EXPECT_EQ(llama70.num_layers, 80);
    EXPECT_EQ(llama70.num_kv_heads, 8);
    EXPECT_EQ(llama70.head_dim, 128);
    const WeightFootprint f16 = weight_footprint(llama70, DType::kF16);
    EXPECT_NEAR(static_cast<double>(f16.num_params), 70.55e9, 0.05e9);  // Meta-Llama-3-70B: 70.6 B parameters
    const ModelShape qwen = model_shape_from_preset("qwen2.5-0.5b").value();
    EXPECT_TRUE(qwen.tied_embeddings);
    EXPECT_TRUE(qwen.qkv_bias);
    EXPECT_NEAR(static_cast<double>(weight_footprint(qwen, DType::kF16).num_params), 494e6,
                1e6);  // Qwen2.5-0.5B: 0.49 B
    const Status unknown = model_shape_from_preset("llama9-1t").status();
    EXPECT_NE(unknown.message().find("unknown model preset 'llama9-1t'; choose one of: "), std::string::npos);
    EXPECT_NE(unknown.message().find("llama2-7b"), std::string::npos);
}

TEST(ModelShape, GgufOfASynthModelGivesItsShapeAndExactBytes) {
    const std::string path = temp_path("tiny_q8_0.gguf");
    ThreadPool pool(1);
    const ModelPreset tiny = *find_preset("tiny-qwen2");
    ASSERT_TRUE(write_synth_model(tiny, SynthOptions{DType::kQ8_0, 1}, path, &pool).is_ok());
    const ModelShape shape = load_model_shape(path).value();
    EXPECT_EQ(shape.source, "gguf");
    EXPECT_EQ(shape.architecture, "qwen2");
    EXPECT_EQ(shape.num_layers, tiny.num_layers);
    EXPECT_EQ(shape.embedding_dim, tiny.embedding_dim);
    EXPECT_EQ(shape.num_kv_heads, tiny.num_kv_heads);
    EXPECT_EQ(shape.vocab_size, tiny.vocab_size);
    EXPECT_TRUE(shape.tied_embeddings);
    EXPECT_TRUE(shape.qkv_bias);
    EXPECT_EQ(shape.file_weight_type, DType::kQ8_0);
    // The planner's per-tensor arithmetic from the shape equals what tern synth wrote.
    const WeightFootprint computed = weight_footprint(model_shape_from_preset("tiny-qwen2").value(), DType::kQ8_0);
    EXPECT_EQ(shape.file_weight_bytes, computed.bytes);
    EXPECT_EQ(shape.file_matmul_bytes, computed.matmul_bytes);
    EXPECT_EQ(shape.file_num_params, computed.num_params);
}

// Qwen3's head norms counted; a mixture of experts holds every expert and a step reads the ones a token uses.
TEST(ModelShape, Qwen3AndAMixtureOfExpertsMatchTheirSynthFiles) {
    ThreadPool pool(1);
    for (const char* preset : {"tiny-qwen3", "tiny-qwen3moe", "tiny-qwen2moe", "tiny-phi3", "tiny-phi3-128k",
                               "tiny-gemma2", "tiny-gemma3", "tiny-mixtral"}) {
        SCOPED_TRACE(preset);
        const std::string path = temp_path(std::string(preset) + ".gguf");
        ASSERT_TRUE(write_synth_model(*find_preset(preset), SynthOptions{DType::kQ8_0, 1}, path, &pool).is_ok());
        const ModelShape shape = model_shape_from_gguf(path).value();
        const ModelShape from_preset = model_shape_from_preset(preset).value();
        const WeightFootprint computed = weight_footprint(from_preset, DType::kQ8_0);
        EXPECT_EQ(shape.file_weight_bytes, computed.bytes);
        EXPECT_EQ(shape.file_matmul_bytes, computed.matmul_bytes);
        EXPECT_EQ(shape.file_num_params, computed.num_params);
        EXPECT_EQ(shape.num_experts, from_preset.num_experts);
    }
    // 2 of 8 experts read: the step reads well under half the weights.
    const WeightFootprint moe = weight_footprint(model_shape_from_preset("qwen3-30b-a3b").value(), DType::kQ8_0);
    EXPECT_NEAR(static_cast<double>(moe.num_params) / 1e9, 30.5, 0.1);
    EXPECT_NEAR(static_cast<double>(moe.matmul_params) / 1e9, 3.0, 0.1);
}

TEST(ModelShape, UntiedQ4SynthModelMatchesTooAndSkipsTheEmbeddingTable) {
    const std::string path = temp_path("tiny_llama3_q4_0.gguf");
    ThreadPool pool(1);
    ASSERT_TRUE(write_synth_model(*find_preset("tiny-llama3"), SynthOptions{DType::kQ4_0, 1}, path, &pool).is_ok());
    const ModelShape shape = model_shape_from_gguf(path).value();
    const WeightFootprint computed = weight_footprint(model_shape_from_preset("tiny-llama3").value(), DType::kQ4_0);
    EXPECT_EQ(shape.file_weight_bytes, computed.bytes);
    EXPECT_EQ(shape.file_matmul_bytes, computed.matmul_bytes);
    EXPECT_LT(*shape.file_matmul_bytes, *shape.file_weight_bytes);  // token_embd is looked up, not streamed
}

TEST(ModelShape, GgufOfAnyArchitectureReadsTheStandardKeys) {
    GgufWriter writer;
    writer.add_string("general.architecture", "mistral");
    writer.add_u32("mistral.block_count", 40);
    writer.add_u32("mistral.embedding_length", 5120);
    writer.add_u32("mistral.feed_forward_length", 14336);
    writer.add_u32("mistral.attention.head_count", 32);
    writer.add_u32("mistral.attention.head_count_kv", 8);
    writer.add_u32("mistral.attention.key_length", 128);
    writer.add_u32("mistral.attention.value_length", 128);
    writer.add_u32("mistral.context_length", 131072);
    writer.add_u32("mistral.vocab_size", 131072);
    const std::string path = temp_path("mistral_nemo_meta.gguf");
    ASSERT_TRUE(writer.write(path).is_ok());
    const ModelShape shape = model_shape_from_gguf(path).value();
    EXPECT_EQ(shape.head_dim, 128);  // from key_length, not 5120 / 32
    EXPECT_EQ(shape.kv_dim(), 1024);
    EXPECT_EQ(shape.q_dim(), 4096);
    EXPECT_EQ(shape.context_length, 131072);
}

TEST(ModelShape, GgufWithoutLayerCountNamesTheKey) {
    GgufWriter writer;
    writer.add_string("general.architecture", "llama");
    writer.add_u32("llama.embedding_length", 64);
    const std::string path = temp_path("no_layers.gguf");
    ASSERT_TRUE(writer.write(path).is_ok());
    const Status status = load_model_shape(path).status();
    EXPECT_NE(status.message().find("missing metadata key 'llama.block_count'"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find(path), std::string::npos);
    write_text(temp_path("truncated.gguf"), "GGUF\x03");
    EXPECT_FALSE(load_model_shape(temp_path("truncated.gguf")).is_ok());
}

TEST(ModelShape, ConfigJsonOfLlama3) {
    const ModelShape shape = model_shape_from_config_text(kLlama3Config, "config.json").value();
    EXPECT_EQ(shape.architecture, "llama");
    EXPECT_EQ(shape.num_layers, 32);
    EXPECT_EQ(shape.num_kv_heads, 8);
    EXPECT_EQ(shape.head_dim, 128);
    EXPECT_EQ(shape.context_length, 8192);
    EXPECT_FALSE(shape.tied_embeddings);
    const ModelShape preset = model_shape_from_preset("llama3-8b").value();
    EXPECT_EQ(weight_footprint(shape, DType::kBF16).bytes, weight_footprint(preset, DType::kBF16).bytes);
    EXPECT_NEAR(static_cast<double>(weight_footprint(shape, DType::kBF16).num_params), 8.03e9, 0.01e9);
}

TEST(ModelShape, ConfigJsonFileFolderAndNestedTextConfig) {
    const std::string folder = temp_path("hf_model");
    std::filesystem::create_directories(folder);
    write_text(folder + "/config.json", kLlama3Config);
    EXPECT_EQ(load_model_shape(folder).value().num_layers, 32);
    EXPECT_EQ(load_model_shape(folder + "/config.json").value().source, "config.json");
    const std::string nested = std::string(R"({"model_type": "llava", "text_config": )") + kLlama3Config + "}";
    EXPECT_EQ(model_shape_from_config_text(nested, "nested").value().num_kv_heads, 8);
    // Without num_key_value_heads every head has its own KV head; head_dim defaults to hidden / heads.
    const std::string mha_config = R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                                       "intermediate_size": 128, "vocab_size": 100})";
    const ModelShape mha = model_shape_from_config_text(mha_config, "mha").value();
    EXPECT_EQ(mha.num_kv_heads, 4);
    EXPECT_EQ(mha.head_dim, 16);
    EXPECT_EQ(mha.context_length, 0);
}

TEST(ModelShape, BadConfigJsonGivesClearErrors) {
    const auto error = [](const std::string& text) {
        return model_shape_from_config_text(text, "cfg.json").status().message();
    };
    EXPECT_NE(error("{not json").find("cfg.json: invalid JSON"), std::string::npos);
    EXPECT_NE(error("[1, 2]").find("expected a JSON object"), std::string::npos);
    EXPECT_NE(error(R"({"hidden_size": 64})").find("missing key \"num_hidden_layers\""), std::string::npos);
    EXPECT_NE(error(R"({"num_hidden_layers": -2, "hidden_size": 64})").find("\"num_hidden_layers\" is -2"),
              std::string::npos);
    EXPECT_NE(error(R"({"num_hidden_layers": "2", "hidden_size": 64})").find("must be a positive integer"),
              std::string::npos);
    EXPECT_NE(error(R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 3,
                       "intermediate_size": 128, "vocab_size": 100})")
                  .find("4 attention heads cannot be grouped over 3"),
              std::string::npos);
    EXPECT_NE(error(R"({"num_local_experts": 8, "num_hidden_layers": 2})").find("mixture-of-experts"),
              std::string::npos);
    EXPECT_NE(error(R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
                       "vocab_size": 100, "model_type": 7})")
                  .find("unexpected value type"),
              std::string::npos);
    const Status missing = load_model_shape(temp_path("does_not_exist.json")).status();
    EXPECT_NE(missing.message().find("neither a preset"), std::string::npos) << missing.message();
}

TEST(ModelShape, ConfigWithARepeatedKeyIsRefused) {
    const auto shape = model_shape_from_config_text(
        R"({"num_hidden_layers": 2, "num_hidden_layers": 32, "hidden_size": 64})", "config.json");
    ASSERT_FALSE(shape.is_ok());
    EXPECT_NE(shape.status().message().find("num_hidden_layers"), std::string::npos) << shape.status().message();
}

}  // namespace
}  // namespace tern::plan
