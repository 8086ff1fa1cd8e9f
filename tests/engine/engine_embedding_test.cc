// Embedding requests: the engine computes the prompt and reports its pooled, unit-length final hidden state, the same
// whether the prompt runs alone in one step, in chunks of a few tokens, or beside generating requests, and equal to
// pooling the model's own hidden states of a plain forward pass.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.h"
#include "synthetic_model_suite.h"

namespace tern::engine {
namespace {

class EngineEmbedding : public testing::SyntheticModelSuite<9> {
protected:
    // The embedding of request 1 (`prompt`, `pooling`) run with `neighbours` generating beside it.
    static std::vector<float> embed(const std::vector<int32_t>& prompt, Pooling pooling, int max_batched_tokens,
                                    int neighbours = 0) {
        EngineConfig config;
        config.kv_cache_bytes = 8 << 20;
        config.kv_type = KvType::kF32;  // as the plain forward's cache below
        config.max_batched_tokens = max_batched_tokens;
        auto engine = Engine::create(*model_, *pool_, config);
        EXPECT_TRUE(engine.is_ok());
        for (int idx = 0; idx < neighbours; ++idx) {
            EngineRequest other{.id = 100 + idx, .prompt = {5, 6, 7, static_cast<int32_t>(8 + idx)}, .max_tokens = 6};
            EXPECT_TRUE(engine.value()->add_request(other).is_ok());
        }
        EngineRequest request{.id = 1, .prompt = prompt, .max_tokens = 1, .embedding = pooling};
        EXPECT_TRUE(engine.value()->add_request(request).is_ok());
        std::vector<float> embedding;
        while (engine.value()->has_unfinished_requests()) {
            auto outputs = engine.value()->step();
            EXPECT_TRUE(outputs.is_ok());
            if (!outputs.is_ok()) break;
            for (const RequestOutput& output : outputs.value()) {
                if (output.id != 1) continue;
                EXPECT_FALSE(output.token) << "an embedding request samples nothing";
                if (output.finish_reason) embedding = output.embedding.value_or(std::vector<float>{});
            }
        }
        return embedding;
    }

    // Pools the hidden states of one plain forward pass over `prompt`.
    static std::vector<float> pooled_directly(const std::vector<int32_t>& prompt, Pooling pooling) {
        KvCache cache(model_->hparams(), 1, 64);
        TokenBatch batch;
        for (size_t idx = 0; idx < prompt.size(); ++idx) {
            batch.add(prompt[idx], static_cast<int32_t>(idx), 0, false, true);
        }
        std::vector<float> logits, hidden;
        EXPECT_TRUE(model_->forward(batch, &cache, pool_.get(), &logits, &hidden).is_ok());
        const size_t dim = static_cast<size_t>(model_->hparams().embedding_dim);
        std::vector<double> sum(dim, 0.0);
        const size_t first = pooling == Pooling::kMean ? 0 : prompt.size() - 1;
        for (size_t row = first; row < prompt.size(); ++row) {
            for (size_t idx = 0; idx < dim; ++idx) sum[idx] += hidden[row * dim + idx];
        }
        double norm = 0.0;
        for (double value : sum) norm += value * value;
        std::vector<float> pooled;
        for (double value : sum) pooled.push_back(static_cast<float>(value / std::sqrt(norm)));
        return pooled;
    }

};

const std::vector<int32_t> kPrompt = {1, 40, 77, 300, 12, 9, 512, 33, 8, 700, 21, 64, 5};

TEST_F(EngineEmbedding, MeanPoolingMatchesTheModelAndIsUnitLength) {
    const std::vector<float> embedding = embed(kPrompt, Pooling::kMean, 2048);
    const std::vector<float> expected = pooled_directly(kPrompt, Pooling::kMean);
    ASSERT_EQ(embedding.size(), static_cast<size_t>(model_->hparams().embedding_dim));
    double norm = 0.0;
    for (size_t idx = 0; idx < embedding.size(); ++idx) {
        EXPECT_NEAR(embedding[idx], expected[idx], 1e-5) << idx;
        norm += static_cast<double>(embedding[idx]) * embedding[idx];
    }
    EXPECT_NEAR(norm, 1.0, 1e-5);
}

TEST_F(EngineEmbedding, LastTokenPoolingMatchesTheModel) {
    const std::vector<float> embedding = embed(kPrompt, Pooling::kLast, 2048);
    const std::vector<float> expected = pooled_directly(kPrompt, Pooling::kLast);
    ASSERT_EQ(embedding.size(), expected.size());
    for (size_t idx = 0; idx < embedding.size(); ++idx) EXPECT_NEAR(embedding[idx], expected[idx], 1e-5) << idx;
    EXPECT_NE(embedding, embed(kPrompt, Pooling::kMean, 2048)) << "the two poolings differ";
}

TEST_F(EngineEmbedding, SameBitsInChunksAndBesideGeneratingRequests) {
    for (Pooling pooling : {Pooling::kMean, Pooling::kLast}) {
        const std::vector<float> alone = embed(kPrompt, pooling, 2048);
        EXPECT_EQ(embed(kPrompt, pooling, 3), alone) << "3-token chunks";
        EXPECT_EQ(embed(kPrompt, pooling, 2048, 4), alone) << "beside 4 generating requests";
        EXPECT_EQ(embed(kPrompt, pooling, 5, 4), alone) << "chunks beside generating requests";
    }
}

}  // namespace
}  // namespace tern::engine
