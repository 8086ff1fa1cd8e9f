// Model loading refuses files that do not describe a complete llama/qwen2 model, naming what is wrong.
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

}  // namespace
}  // namespace tern
