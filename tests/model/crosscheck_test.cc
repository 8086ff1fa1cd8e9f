// tern against llama.cpp on the same `tern synth` f32 models (tests/model/data/crosscheck, written by
// scripts/crosscheck-llama; this test runs without llama.cpp): fed llama-server's greedy tokens, tern's top-10
// log-probabilities agree with llama-server's to 1e-3 at every position, and tern's greedy choice is llama's (or
// ties with it to 1e-3: random weights give near-uniform distributions). One model per architecture, tiny and at a
// real model's widths and heads. Quantized files (data/crosscheck-quantized, llama-server's whole next-token
// distribution): the engines round activations differently, so the criterion is the KL divergence between them,
// which must not exceed the file's own KL divergence against the f32 model.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "quantize/quantizer.h"
#include "synth/synth.h"

namespace tern {
namespace {

std::vector<std::string> crosscheck_files(const char* dir = TERN_CROSSCHECK_DIR) {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() == ".json") files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

// llama-server's context (files before it was recorded ran 1,024, where only LongRoPE's choice of factors depends
// on it): tern loads for the same one.
ModelOptions load_options(const nlohmann::json& data) {
    ModelOptions options;
    options.context_length = data.value("context", int64_t{1024});
    return options;
}

// The model the figures were computed on, written again (tern synth is deterministic for a seed), in the file's
// weight type or in `type`.
std::unique_ptr<Model> synth_model(const nlohmann::json& data, const std::string& path,
                                   std::optional<DType> type = std::nullopt) {
    std::optional<ModelPreset> preset = find_preset(data["preset"].get<std::string>());
    EXPECT_TRUE(preset.has_value());
    if (!preset) return nullptr;
    const Status shrunk = shrink_preset(&*preset, data["layers"].get<int64_t>(), data["vocab_size"].get<int64_t>(),
                                        data.value("experts", int64_t{0}));
    EXPECT_TRUE(shrunk.is_ok()) << shrunk.message();
    ThreadPool pool(2);
    const std::optional<DType> file_type = dtype_from_name(data["type"].get<std::string>());
    EXPECT_TRUE(file_type.has_value());
    const DType weight_type = type.value_or(file_type.value_or(DType::kF32));
    const Status written =
        write_synth_model(*preset, SynthOptions{weight_type, data["seed"].get<uint64_t>()}, path, &pool);
    EXPECT_TRUE(written.is_ok()) << written.message();
    auto model = Model::load(path, load_options(data));
    EXPECT_TRUE(model.is_ok()) << model.status().message();
    std::filesystem::remove(path);
    return model.is_ok() ? std::move(model.value()) : nullptr;
}

std::vector<double> log_softmax(const float* logits, int64_t length) {
    const double max = *std::max_element(logits, logits + length);
    double sum = 0.0;
    for (int64_t idx = 0; idx < length; ++idx) sum += std::exp(logits[idx] - max);
    std::vector<double> out(static_cast<size_t>(length));
    for (int64_t idx = 0; idx < length; ++idx) out[static_cast<size_t>(idx)] = logits[idx] - max - std::log(sum);
    return out;
}

class CrossCheck : public ::testing::TestWithParam<std::string> {};

TEST_P(CrossCheck, LogProbabilitiesAndGreedyTokensAgreeWithLlamaCpp) {
    std::ifstream stream(GetParam());
    const nlohmann::json data = nlohmann::json::parse(stream);
    // One file per case: ctest runs the cases as parallel processes.
    const std::string path =
        ::testing::TempDir() + "/crosscheck-" + std::filesystem::path(GetParam()).stem().string() + ".gguf";
    std::unique_ptr<Model> model = synth_model(data, path);
    ASSERT_NE(model, nullptr);
    const int64_t vocab_size = model->hparams().vocab_size;
    const auto banned = data["banned"].get<std::vector<int32_t>>();
    ThreadPool pool(2);
    double worst = 0.0;
    for (const nlohmann::json& item : data["cases"]) {
        const auto prompt = item["prompt"].get<std::vector<int32_t>>();
        const auto tokens = item["tokens"].get<std::vector<int32_t>>();
        std::vector<int32_t> sequence = prompt;
        sequence.insert(sequence.end(), tokens.begin(), tokens.end() - 1);
        KvCache cache(model->hparams(), 1, static_cast<int64_t>(sequence.size()));
        TokenBatch batch;
        for (size_t idx = 0; idx < sequence.size(); ++idx) {
            batch.add(sequence[idx], static_cast<int32_t>(idx), 0, idx + 1 >= prompt.size());
        }
        std::vector<float> logits;
        ASSERT_TRUE(model->forward(batch, &cache, &pool, &logits).is_ok());
        ASSERT_EQ(logits.size(), tokens.size() * static_cast<size_t>(vocab_size));
        for (size_t position = 0; position < tokens.size(); ++position) {
            SCOPED_TRACE(GetParam() + " prompt of " + std::to_string(prompt.size()) + ", position " +
                         std::to_string(position));
            const std::vector<double> ours = log_softmax(logits.data() + position * vocab_size, vocab_size);
            for (const nlohmann::json& pair : item["top"][position]) {
                const double error = std::abs(ours[pair[0].get<size_t>()] - pair[1].get<double>());
                worst = std::max(worst, error);
                EXPECT_LT(error, 1e-3) << "token " << pair[0];
            }
            double best = -INFINITY;  // the greedy choice among the tokens llama-server could choose
            for (int64_t id = 0; id < vocab_size; ++id) {
                if (id < banned[0] || id > banned[1]) best = std::max(best, ours[static_cast<size_t>(id)]);
            }
            EXPECT_LT(best - ours[static_cast<size_t>(tokens[position])], 1e-3) << "llama chose " << tokens[position];
        }
    }
    RecordProperty("worst_logprob_error", std::to_string(worst));
}

// FNV-1a 64 over the file's tensors in name order: name, ggml type (u32) and data bytes, as
// scripts/lib/gguf_tensor_digest.py computes it on llama-quantize's file.
std::string tensor_digest(const std::string& path) {
    auto file = GgufFile::open(path);
    EXPECT_TRUE(file.is_ok()) << file.status().message();
    if (!file.is_ok()) return "";
    std::vector<const GgufTensorInfo*> tensors;
    for (const GgufTensorInfo& info : file.value()->tensors()) tensors.push_back(&info);
    std::sort(tensors.begin(), tensors.end(), [](auto* a, auto* b) { return a->name < b->name; });
    uint64_t state = 0xcbf29ce484222325ull;
    const auto mix = [&](const uint8_t* bytes, size_t count) {
        for (size_t idx = 0; idx < count; ++idx) state = (state ^ bytes[idx]) * 0x100000001b3ull;
    };
    for (const GgufTensorInfo* info : tensors) {
        mix(reinterpret_cast<const uint8_t*>(info->name.data()), info->name.size());
        const uint32_t type = static_cast<uint32_t>(info->type);
        mix(reinterpret_cast<const uint8_t*>(&type), sizeof(type));
        mix(info->data, static_cast<size_t>(info->num_bytes));
    }
    return fmt::format("{:016x}", state);
}

// The file the figures were computed on. A llama-quantize file is made again by tern quantize from the f32 one,
// which must reproduce its tensors exactly (same digest); the others by tern synth.
std::unique_ptr<Model> quantized_model(const nlohmann::json& data, const std::string& path) {
    if (!data.contains("llama_quantize")) return synth_model(data, path);
    const std::string f32_path = path + ".f32.gguf";
    std::optional<ModelPreset> preset = find_preset(data["preset"].get<std::string>());
    EXPECT_TRUE(preset && shrink_preset(&*preset, data["layers"].get<int64_t>(), data["vocab_size"].get<int64_t>(),
                                        data.value("experts", int64_t{0})).is_ok());
    ThreadPool pool(2);
    EXPECT_TRUE(write_synth_model(*preset, SynthOptions{DType::kF32, data["seed"].get<uint64_t>()}, f32_path, &pool)
                    .is_ok());
    QuantizeOptions options;
    options.preset = *parse_quant_preset(data["llama_quantize"].get<std::string>());
    auto summary = quantize_model(f32_path, path, options, &pool);
    EXPECT_TRUE(summary.is_ok()) << summary.status().message();
    std::filesystem::remove(f32_path);
    EXPECT_EQ(tensor_digest(path), data["tensor_digest"].get<std::string>())
        << "tern quantize no longer writes what llama-quantize wrote";
    auto model = Model::load(path, load_options(data));
    EXPECT_TRUE(model.is_ok()) << model.status().message();
    std::filesystem::remove(path);
    return model.is_ok() ? std::move(model.value()) : nullptr;
}

// tern's log-probabilities at each of the sequence's positions (the prompt's last token, then each generated one).
std::vector<std::vector<double>> sequence_logprobs(Model& model, const std::vector<int32_t>& prompt,
                                                   const std::vector<int32_t>& tokens) {
    std::vector<int32_t> sequence = prompt;
    sequence.insert(sequence.end(), tokens.begin(), tokens.end() - 1);
    KvCache cache(model.hparams(), 1, static_cast<int64_t>(sequence.size()));
    TokenBatch batch;
    for (size_t idx = 0; idx < sequence.size(); ++idx) {
        batch.add(sequence[idx], static_cast<int32_t>(idx), 0, idx + 1 >= prompt.size());
    }
    ThreadPool pool(2);
    std::vector<float> logits;
    EXPECT_TRUE(model.forward(batch, &cache, &pool, &logits).is_ok());
    const int64_t vocab_size = model.hparams().vocab_size;
    std::vector<std::vector<double>> rows;
    for (size_t position = 0; position < tokens.size(); ++position) {
        rows.push_back(log_softmax(logits.data() + position * vocab_size, vocab_size));
    }
    return rows;
}

// Mean over positions of KL(p || q), from log-probabilities.
double mean_kl(const std::vector<std::vector<double>>& p, const std::vector<std::vector<double>>& q) {
    double total = 0.0;
    for (size_t position = 0; position < p.size(); ++position) {
        for (size_t id = 0; id < p[position].size(); ++id) {
            total += std::exp(p[position][id]) * (p[position][id] - q[position][id]);
        }
    }
    return total / static_cast<double>(p.size());
}

class QuantizedCrossCheck : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantizedCrossCheck, EnginesDifferLessThanTheFileDiffersFromF32) {
    std::ifstream stream(GetParam());
    const nlohmann::json data = nlohmann::json::parse(stream);
    const std::string stem = std::filesystem::path(GetParam()).stem().string();
    std::unique_ptr<Model> quantized = quantized_model(data, ::testing::TempDir() + "/crosscheck-" + stem + ".gguf");
    std::unique_ptr<Model> f32 =
        synth_model(data, ::testing::TempDir() + "/crosscheck-" + stem + "-f32.gguf", DType::kF32);
    ASSERT_NE(quantized, nullptr);
    ASSERT_NE(f32, nullptr);
    for (const nlohmann::json& item : data["cases"]) {
        const auto prompt = item["prompt"].get<std::vector<int32_t>>();
        const auto tokens = item["tokens"].get<std::vector<int32_t>>();
        const auto llama = item["full"].get<std::vector<std::vector<double>>>();
        const auto ours = sequence_logprobs(*quantized, prompt, tokens);
        const auto reference = sequence_logprobs(*f32, prompt, tokens);
        ASSERT_EQ(llama.size(), ours.size());
        ASSERT_EQ(llama.front().size(), ours.front().size());
        const double between_engines = mean_kl(llama, ours);
        const double file_vs_f32 = mean_kl(reference, ours);
        const double llama_vs_f32 = mean_kl(reference, llama);
        RecordProperty("kl_llama_tern", fmt::format("{:.3g}", between_engines));
        RecordProperty("kl_f32_tern", fmt::format("{:.3g}", file_vs_f32));
        RecordProperty("kl_f32_llama", fmt::format("{:.3g}", llama_vs_f32));
        EXPECT_GT(file_vs_f32, 0.0) << "the quantized file should differ from f32";
        EXPECT_LE(between_engines, file_vs_f32) << "llama.cpp's KL to f32: " << llama_vs_f32;
    }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
    std::string name = std::filesystem::path(info.param).stem().string();
    std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
    return name;
}

INSTANTIATE_TEST_SUITE_P(Architectures, CrossCheck, ::testing::ValuesIn(crosscheck_files()), test_name);
INSTANTIATE_TEST_SUITE_P(Architectures, QuantizedCrossCheck,
                         ::testing::ValuesIn(crosscheck_files(TERN_CROSSCHECK_QUANTIZED_DIR)), test_name);

}  // namespace
}  // namespace tern
