// tern against llama.cpp on the same `tern synth` f32 models (tests/model/data/crosscheck, written by
// scripts/crosscheck-llama; this test runs without llama.cpp): fed llama-server's greedy tokens, tern's top-10
// log-probabilities agree with llama-server's to 1e-3 at every position, and tern's greedy choice is llama's (or
// ties with it to 1e-3: random weights give near-uniform distributions). One model per architecture, tiny and at a
// real model's widths and heads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "synth/synth.h"

namespace tern {
namespace {

std::vector<std::string> crosscheck_files() {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(TERN_CROSSCHECK_DIR)) {
        if (entry.path().extension() == ".json") files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

// The model the figures were computed on, written again (tern synth is deterministic for a seed).
std::unique_ptr<Model> synth_model(const nlohmann::json& data, const std::string& path) {
    std::optional<ModelPreset> preset = find_preset(data["preset"].get<std::string>());
    EXPECT_TRUE(preset.has_value());
    if (!preset) return nullptr;
    const Status shrunk = shrink_preset(&*preset, data["layers"].get<int64_t>(), data["vocab_size"].get<int64_t>(),
                                        data.value("experts", int64_t{0}));
    EXPECT_TRUE(shrunk.is_ok()) << shrunk.message();
    ThreadPool pool(2);
    const Status written =
        write_synth_model(*preset, SynthOptions{DType::kF32, data["seed"].get<uint64_t>()}, path, &pool);
    EXPECT_TRUE(written.is_ok()) << written.message();
    auto model = Model::load(path);
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

INSTANTIATE_TEST_SUITE_P(Architectures, CrossCheck, ::testing::ValuesIn(crosscheck_files()), [](const auto& info) {
    std::string name = std::filesystem::path(info.param).stem().string();
    std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
    return name;
});

}  // namespace
}  // namespace tern
