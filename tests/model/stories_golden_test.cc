// stories260K against a float64 reference: exact greedy ids for 32 steps and last-prompt logits within 1e-3.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/model.h"

namespace tern {
namespace {

const std::string kModelDir = std::string(TERN_SHARED_DIR) + "/models/stories260K";

nlohmann::json load_reference() {
    std::ifstream stream(kModelDir + "/reference.json");
    return nlohmann::json::parse(stream);
}

int32_t argmax(const float* row, int64_t length) {
    return static_cast<int32_t>(std::max_element(row, row + length) - row);
}

// Parameters: thread count and instruction set.
class StoriesGolden : public ::testing::TestWithParam<std::tuple<int, kernels::Isa>> {};

TEST_P(StoriesGolden, GreedyIdsAndLogitsMatchReference) {
    const kernels::KernelTable* table = kernels::kernel_table(std::get<1>(GetParam()));
    if (table == nullptr) GTEST_SKIP() << "this CPU cannot run " << kernels::isa_name(std::get<1>(GetParam()));
    const nlohmann::json reference = load_reference();
    auto loaded = Model::load(kModelDir + "/stories260K-f32.gguf", ModelOptions{true, table});
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    Model& model = *loaded.value();
    const int64_t vocab_size = model.hparams().vocab_size;
    ASSERT_EQ(vocab_size, 512);
    ThreadPool pool(std::get<0>(GetParam()));
    const int num_steps = reference["n_gen"].get<int>();
    for (const nlohmann::json& prompt : reference["prompts"]) {
        const auto prompt_tokens = prompt["prompt_tokens"].get<std::vector<int32_t>>();
        const auto expected_ids = prompt["greedy_tokens"].get<std::vector<int32_t>>();
        const auto expected_logits = prompt["last_prompt_logits"].get<std::vector<double>>();
        KvCache cache(model.hparams(), 1, static_cast<int64_t>(prompt_tokens.size()) + num_steps);
        TokenBatch batch;
        for (size_t idx = 0; idx < prompt_tokens.size(); ++idx) {
            batch.add(prompt_tokens[idx], static_cast<int32_t>(idx), 0, idx + 1 == prompt_tokens.size());
        }
        std::vector<float> logits;
        ASSERT_TRUE(model.forward(batch, &cache, &pool, &logits).is_ok());
        ASSERT_EQ(logits.size(), static_cast<size_t>(vocab_size));
        double max_error = 0.0;
        for (int64_t idx = 0; idx < vocab_size; ++idx) {
            max_error = std::max(max_error, std::abs(logits[idx] - expected_logits[static_cast<size_t>(idx)]));
        }
        EXPECT_LT(max_error, 1e-3) << prompt["text"];
        std::vector<int32_t> generated;
        int32_t position = static_cast<int32_t>(prompt_tokens.size());
        for (int step = 0; step < num_steps; ++step) {
            const int32_t next = argmax(logits.data(), vocab_size);
            generated.push_back(next);
            batch.clear();
            batch.add(next, position++, 0, true);
            ASSERT_TRUE(model.forward(batch, &cache, &pool, &logits).is_ok());
        }
        EXPECT_EQ(generated, expected_ids) << prompt["text"];
    }
}

INSTANTIATE_TEST_SUITE_P(ThreadsAndIsas, StoriesGolden,
                         ::testing::Combine(::testing::Values(1, 2), ::testing::Values(kernels::Isa::kRef,
                                                                                       kernels::Isa::kAvx2,
                                                                                       kernels::Isa::kAvx512)),
                         [](const auto& info) {
                             return std::string(kernels::isa_name(std::get<1>(info.param))) + "_" +
                                    std::to_string(std::get<0>(info.param)) + "_threads";
                         });

}  // namespace
}  // namespace tern
