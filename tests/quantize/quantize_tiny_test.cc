// Every preset quantizes synthetic models (the `tiny` preset, and a 256-wide one so that k-quant blocks really
// apply), the result loads and generates, its logits stay near the f32 model's, and bad input fails cleanly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "model/model.h"
#include "quantize/quantizer.h"
#include "synth/synth.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
    static const fs::path dir = [] {
        fs::path path = fs::path(TERN_TEST_TMP) / "quantize" / ("tiny-" + std::to_string(::getpid()));
        fs::create_directories(path);
        return path;
    }();
    return dir;
}

ModelPreset wide_preset() {
    ModelPreset preset = *find_preset("tiny");
    preset.name = "tiny-256";
    preset.embedding_dim = 256;
    preset.ffn_dim = 512;
    preset.num_layers = 3;
    return preset;
}

std::string write_model(const ModelPreset& preset, DType type, const std::string& name) {
    const std::string path = (temp_dir() / name).string();
    if (!fs::exists(path)) {
        ThreadPool pool(2);
        EXPECT_TRUE(write_synth_model(preset, SynthOptions{type, 7}, path, &pool).is_ok());
    }
    return path;
}

// Last-position logits of a fixed prompt, then `steps` greedy tokens.
std::vector<float> run_model(const std::string& path, int steps, std::vector<int32_t>* generated) {
    auto loaded = Model::load(path);
    EXPECT_TRUE(loaded.is_ok()) << loaded.status().message();
    if (!loaded.is_ok()) return {};
    Model& model = *loaded.value();
    ThreadPool pool(2);
    KvCache cache(model.hparams(), 1, 64);
    TokenBatch batch;
    const std::vector<int32_t> prompt = {1, 300, 301, 302, 500, 42, 77};
    for (size_t idx = 0; idx < prompt.size(); ++idx)
        batch.add(prompt[idx], static_cast<int32_t>(idx), 0, idx + 1 == prompt.size());
    std::vector<float> logits;
    EXPECT_TRUE(model.forward(batch, &cache, &pool, &logits).is_ok());
    const std::vector<float> first = logits;
    int32_t position = static_cast<int32_t>(prompt.size());
    for (int step = 0; step < steps; ++step) {
        const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        generated->push_back(next);
        batch.clear();
        batch.add(next, position++, 0, true);
        EXPECT_TRUE(model.forward(batch, &cache, &pool, &logits).is_ok());
    }
    return first;
}

double relative_error(const std::vector<float>& expected, const std::vector<float>& actual) {
    double diff = 0.0;
    double norm = 0.0;
    for (size_t idx = 0; idx < expected.size() && idx < actual.size(); ++idx) {
        diff += (expected[idx] - actual[idx]) * (expected[idx] - actual[idx]);
        norm += expected[idx] * expected[idx];
    }
    return std::sqrt(diff / std::max(norm, 1e-30));
}

struct PresetCase {
    QuantPreset preset;
    // Of the last prompt position's logits against f32. Four random layers amplify weight error (q8_0 gives about
    // 2%), so the bounds are about twice what was measured; unrelated logits would give about 1.4.
    double max_relative_error;
};

class QuantizeSynthetic : public ::testing::TestWithParam<std::tuple<bool, PresetCase>> {};

TEST_P(QuantizeSynthetic, QuantizesLoadsAndGenerates) {
    const bool wide = std::get<0>(GetParam());
    const PresetCase param = std::get<1>(GetParam());
    const ModelPreset preset = wide ? wide_preset() : *find_preset("tiny");
    const std::string input = write_model(preset, DType::kF32, preset.name + "-f32.gguf");
    const std::string output =
        (temp_dir() / (preset.name + "-" + std::string(quant_preset_name(param.preset)) + ".gguf")).string();
    ThreadPool pool(2);
    int64_t callbacks = 0;
    QuantizeOptions options{param.preset, [&](int64_t done, int64_t total, const std::string&) {
                                ++callbacks;
                                EXPECT_LE(done, total);
                            }};
    auto summary = quantize_model(input, output, options, &pool);
    ASSERT_TRUE(summary.is_ok()) << summary.status().message();
    EXPECT_LT(summary.value().bytes_after, summary.value().bytes_before / 3);
    auto file = GgufFile::open(output);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    EXPECT_EQ(callbacks, static_cast<int64_t>(file.value()->tensors().size()));
    int64_t counted = 0;
    for (const auto& [type, count] : summary.value().type_counts) counted += count;
    EXPECT_EQ(counted, callbacks);
    for (const GgufTensorInfo& tensor : file.value()->tensors()) {
        if (tensor.dims.size() == 1) {
            EXPECT_EQ(tensor.type, DType::kF32) << tensor.name;
            continue;
        }
        EXPECT_EQ(tensor.dims[0] % dtype_traits(tensor.type).block_size, 0) << tensor.name;
        if (wide && tensor.name == "blk.1.ffn_up.weight") {
            EXPECT_EQ(tensor.type, preset_base_type(param.preset));
        }
    }
    EXPECT_EQ(file.value()->get_string("general.architecture"), "llama");
    EXPECT_EQ(file.value()->get_int("general.file_type"), preset_file_type(param.preset));
    std::vector<int32_t> base_ids;
    std::vector<int32_t> quant_ids;
    const std::vector<float> base_logits = run_model(input, 0, &base_ids);
    const std::vector<float> quant_logits = run_model(output, 8, &quant_ids);
    EXPECT_EQ(quant_ids.size(), 8u);
    const double error = relative_error(base_logits, quant_logits);
    RecordProperty("logit_relative_error", std::to_string(error));
    EXPECT_LT(error, param.max_relative_error);
}

// tern synth and tern convert label a file as tern quantize does (llama.cpp's llama_ftype, which llama-bench prints):
// an all-Q4_K synth file once said 12, which llama.cpp reads as "Q3_K - Medium".
TEST(FileType, SynthAndConvertLabelFilesAsTheQuantizerDoes) {
    for (QuantPreset preset : {QuantPreset::kQ8_0, QuantPreset::kQ4_0, QuantPreset::kQ4_K, QuantPreset::kQ5_K,
                               QuantPreset::kQ6_K}) {
        EXPECT_EQ(llama_file_type(preset_base_type(preset)), preset_file_type(preset)) << quant_preset_name(preset);
    }
    for (DType type : {DType::kQ4_K, DType::kQ8_0, DType::kQ6_K}) {
        const std::string path = write_model(*find_preset("tiny"), type, "file-type-" +
                                             std::string(dtype_name(type)) + ".gguf");
        auto file = GgufFile::open(path);
        ASSERT_TRUE(file.is_ok()) << file.status().message();
        EXPECT_EQ(file.value()->get_int("general.file_type"), llama_file_type(type)) << dtype_name(type);
    }
    EXPECT_EQ(llama_file_type(DType::kQ4_K), 14u);  // LLAMA_FTYPE_MOSTLY_Q4_K_S
}

INSTANTIATE_TEST_SUITE_P(
    Presets, QuantizeSynthetic,
    ::testing::Combine(::testing::Bool(),
                       ::testing::Values(PresetCase{QuantPreset::kQ8_0, 0.04}, PresetCase{QuantPreset::kQ4_0, 0.45},
                                         PresetCase{QuantPreset::kQ4_K, 0.3}, PresetCase{QuantPreset::kQ5_K, 0.2},
                                         PresetCase{QuantPreset::kQ6_K, 0.1}, PresetCase{QuantPreset::kQ4_K_M, 0.3})),
    [](const auto& info) {
        return std::string(std::get<0>(info.param) ? "wide_" : "tiny_") +
               std::string(quant_preset_name(std::get<1>(info.param).preset));
    });

TEST(Quantize, WideModelGetsRealKQuantsAndTheQ4KMMix) {
    const std::string input = write_model(wide_preset(), DType::kF32, "tiny-256-f32.gguf");
    const std::string output = (temp_dir() / "mix.gguf").string();
    ThreadPool pool(2);
    ASSERT_TRUE(quantize_model(input, output, QuantizeOptions{QuantPreset::kQ4_K_M, {}}, &pool).is_ok());
    auto file = GgufFile::open(output);
    ASSERT_TRUE(file.is_ok());
    // Three layers: use_more_bits picks only layer 2 (the last eighth, and every third from layer 0).
    EXPECT_EQ(file.value()->find_tensor("blk.2.attn_v.weight")->type, DType::kQ6_K);
    EXPECT_EQ(file.value()->find_tensor("blk.2.ffn_down.weight")->type, DType::kQ6_K);
    EXPECT_EQ(file.value()->find_tensor("blk.0.attn_v.weight")->type, DType::kQ4_K);
    EXPECT_EQ(file.value()->find_tensor("blk.1.ffn_down.weight")->type, DType::kQ4_K);
    EXPECT_EQ(file.value()->find_tensor("output.weight")->type, DType::kQ6_K);
    EXPECT_EQ(file.value()->find_tensor("token_embd.weight")->type, DType::kQ4_K);
}

TEST(Quantize, MoreBitsGiveCloserLogitsOnTheWideModel) {
    const std::string input = write_model(wide_preset(), DType::kF32, "tiny-256-f32.gguf");
    ThreadPool pool(2);
    std::vector<int32_t> ids;
    const std::vector<float> base = run_model(input, 0, &ids);
    std::vector<double> errors;
    for (QuantPreset preset : {QuantPreset::kQ4_K, QuantPreset::kQ5_K, QuantPreset::kQ6_K, QuantPreset::kQ8_0}) {
        const std::string output =
            (temp_dir() / ("order-" + std::string(quant_preset_name(preset)) + ".gguf")).string();
        ASSERT_TRUE(quantize_model(input, output, QuantizeOptions{preset, {}}, &pool).is_ok());
        errors.push_back(relative_error(base, run_model(output, 0, &ids)));
    }
    EXPECT_GT(errors[0], errors[1]);
    EXPECT_GT(errors[1], errors[2]);
    EXPECT_GT(errors[2], errors[3]);
}

TEST(Quantize, RequantizesFromAQuantizedSource) {
    const std::string input = write_model(*find_preset("tiny"), DType::kQ8_0, "tiny-q8_0.gguf");
    const std::string output = (temp_dir() / "from-q8_0.gguf").string();
    ThreadPool pool(1);
    auto summary = quantize_model(input, output, QuantizeOptions{QuantPreset::kQ4_0, {}}, &pool);
    ASSERT_TRUE(summary.is_ok()) << summary.status().message();
    EXPECT_GT(summary.value().num_requantized, 0);
    std::vector<int32_t> ids;
    EXPECT_FALSE(run_model(output, 4, &ids).empty());
}

TEST(Quantize, CorruptOrMissingInputIsAClearError) {
    const std::string input = write_model(*find_preset("tiny"), DType::kF32, "tiny-f32.gguf");
    const std::string truncated = (temp_dir() / "truncated.gguf").string();
    {
        std::ifstream in(input, std::ios::binary);
        std::vector<char> bytes(4096);
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        std::ofstream out(truncated, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    ThreadPool pool(1);
    const std::string output = (temp_dir() / "never.gguf").string();
    auto result = quantize_model(truncated, output, QuantizeOptions{QuantPreset::kQ8_0, {}}, &pool);
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("truncated.gguf"), std::string::npos) << result.status().message();
    EXPECT_FALSE(fs::exists(output));
    auto missing = quantize_model((temp_dir() / "missing.gguf").string(), output, QuantizeOptions{}, &pool);
    ASSERT_FALSE(missing.is_ok());
    EXPECT_NE(missing.status().message().find("missing.gguf"), std::string::npos);
    auto same = quantize_model(input, input, QuantizeOptions{}, &pool);
    ASSERT_FALSE(same.is_ok());
    EXPECT_NE(same.status().message().find("input"), std::string::npos);
}

}  // namespace
}  // namespace tern
