// The mixture-of-experts bookkeeping (model/expert_rows.h) against a plain model of the step's choices, on random
// steps; and a model whose step runs its experts in several waves against the same tokens in small steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>

#include "model/expert_rows.h"
#include "model/model.h"
#include "synth/synth.h"

namespace tern {
namespace {

TEST(ExpertRows, EveryChoiceHasOneRowAndEveryExpertItsRowsTogether) {
    std::mt19937 random(11);
    for (int trial = 0; trial < 300; ++trial) {
        const int64_t num_experts = std::uniform_int_distribution<int64_t>(1, 40)(random);
        const int64_t per_token = std::uniform_int_distribution<int64_t>(1, std::min<int64_t>(num_experts, 8))(random);
        const int64_t num_tokens = std::uniform_int_distribution<int64_t>(1, 70)(random);
        ExpertRows rows;
        rows.reset(num_tokens, per_token);
        std::map<std::pair<int64_t, int64_t>, float> chosen;  // (token, expert) -> weight
        std::vector<int64_t> all(static_cast<size_t>(num_experts));
        for (int64_t token = 0; token < num_tokens; ++token) {
            std::iota(all.begin(), all.end(), 0);
            std::shuffle(all.begin(), all.end(), random);  // the router's ranking, best first
            std::vector<float> weights(static_cast<size_t>(per_token));
            for (float& weight : weights) weight = std::uniform_real_distribution<float>(0.0f, 1.0f)(random);
            for (int64_t j = 0; j < per_token; ++j) chosen[{token, all[j]}] = weights[static_cast<size_t>(j)];
            rows.choose(token, all.data(), weights.data());
        }
        rows.group_rows(num_tokens, num_experts);
        ASSERT_EQ(rows.num_rows(), num_tokens * per_token);
        std::vector<int> row_uses(static_cast<size_t>(rows.num_rows()), 0);
        for (int64_t token = 0; token < num_tokens; ++token) {
            for (int64_t j = 0; j < per_token; ++j) {
                const auto idx = static_cast<size_t>(token * per_token + j);
                const int64_t expert = rows.token_experts[idx], row = rows.token_rows[idx];
                if (j > 0) {
                    EXPECT_LT(rows.token_experts[idx - 1], expert) << "a token's experts in id order";
                }
                const auto choice = chosen.find({token, expert});
                ASSERT_NE(choice, chosen.end());
                EXPECT_EQ(rows.token_weights[idx], choice->second) << "the weight follows its expert";
                ASSERT_GE(row, 0);
                ASSERT_LT(row, rows.num_rows());
                ++row_uses[static_cast<size_t>(row)];
                EXPECT_EQ(rows.row_tokens[static_cast<size_t>(row)], token);
                const auto batch = std::find_if(rows.batches.begin(), rows.batches.end(),
                                                [&](const ExpertBatch& b) { return b.expert == expert; });
                ASSERT_NE(batch, rows.batches.end());
                EXPECT_GE(row, batch->first_row);
                EXPECT_LT(row, batch->first_row + batch->count);
            }
        }
        EXPECT_TRUE(std::all_of(row_uses.begin(), row_uses.end(), [](int uses) { return uses == 1; }));
        int64_t next_row = 0;
        for (size_t b = 0; b < rows.batches.size(); ++b) {
            const ExpertBatch& batch = rows.batches[b];
            if (b > 0) {
                EXPECT_LT(rows.batches[b - 1].expert, batch.expert);
            }
            EXPECT_EQ(batch.first_row, next_row);
            EXPECT_GT(batch.count, 0);
            int64_t count = 0;
            for (const auto& [key, weight] : chosen) count += key.second == batch.expert;
            EXPECT_EQ(batch.count, count);
            for (int64_t row = batch.first_row + 1; row < batch.first_row + batch.count; ++row) {
                EXPECT_LT(rows.row_tokens[static_cast<size_t>(row - 1)], rows.row_tokens[static_cast<size_t>(row)]);
            }
            next_row += batch.count;
        }
        const int64_t max_rows = std::uniform_int_distribution<int64_t>(1, 2 * num_tokens)(random);
        size_t covered = 0;
        while (covered < rows.batches.size()) {
            const size_t end = expert_wave_end(rows.batches, covered, max_rows);
            ASSERT_GT(end, covered);
            int64_t wave_rows = 0;
            for (size_t b = covered; b < end; ++b) wave_rows += rows.batches[b].count;
            if (end - covered > 1) {
                EXPECT_LE(wave_rows, max_rows);
            }
            if (end < rows.batches.size()) {
                EXPECT_GT(wave_rows + rows.batches[end].count, max_rows) << "as full as fits";
            }
            covered = end;
        }
    }
}

// 2,100 tokens of tiny-qwen3moe (2 of 8 experts each) are 4,200 rows: one step runs them in two waves. The same
// tokens in steps of 300 (one wave each) give the same logits.
TEST(ExpertWaves, AStepInWavesEqualsSmallSteps) {
    std::optional<ModelPreset> preset = find_preset("tiny-qwen3moe");
    preset->context_length = 4096;
    std::filesystem::create_directories(TERN_TEST_TMP);
    const std::string path = std::string(TERN_TEST_TMP) + "/expert_waves.gguf";
    ThreadPool pool(2);
    ASSERT_TRUE(write_synth_model(*preset, SynthOptions{DType::kQ8_0, 3}, path, &pool).is_ok());
    auto loaded = Model::load(path);
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    Model& model = *loaded.value();
    constexpr int32_t kTokens = 2100;
    std::mt19937 random(5);
    std::vector<int32_t> tokens(kTokens);
    for (int32_t& token : tokens) token = std::uniform_int_distribution<int32_t>(0, 1023)(random);
    const auto run = [&](int32_t step) {
        KvCache cache(model.hparams(), 1, kTokens);
        std::vector<float> logits, all;
        for (int32_t first = 0; first < kTokens; first += step) {
            TokenBatch batch;
            for (int32_t idx = first; idx < std::min(kTokens, first + step); ++idx) {
                batch.add(tokens[static_cast<size_t>(idx)], idx, 0, idx % 97 == 0 || idx == kTokens - 1);
            }
            EXPECT_TRUE(model.forward(batch, &cache, &pool, &logits).is_ok());
            all.insert(all.end(), logits.begin(), logits.end());
        }
        return all;
    };
    const std::vector<float> one_step = run(kTokens), small_steps = run(300);
    ASSERT_EQ(one_step.size(), small_steps.size());
    ASSERT_FALSE(one_step.empty());
    for (size_t idx = 0; idx < one_step.size(); ++idx) {
        ASSERT_EQ(one_step[idx], small_steps[idx]) << "logit " << idx;
    }
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace tern
