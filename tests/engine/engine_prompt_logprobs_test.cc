// Prompt log-probabilities (vLLM's prompt_logprobs): the engine reports, with a request's first token, each prompt
// token's log-probability given the tokens before it, its rank and the most likely tokens there. They must equal the
// log-softmax of the model's own logits over a plain forward pass, and be the same bits whether the prompt runs
// alone, in chunks, beside generating requests, or after the same prompt is in the prefix cache (such a request takes
// no hits: every position's logits are needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/engine.h"
#include "synthetic_model_suite.h"

namespace tern::engine {
namespace {

struct PromptRun {
    std::vector<TokenLogprobs> prompt_logprobs;
    int num_reports = 0;           // outputs that carried prompt log-probabilities
    bool with_first_token = false;  // they came with the request's first token
    int64_t num_cached_prompt_tokens = -1;
};

class EnginePromptLogprobs : public testing::SyntheticModelSuite<11> {
protected:
    // Request 1 (`prompt`, `num_top` alternatives) after `warm_prompt` (if any) ran to the end, with `neighbours`
    // generating beside it.
    static PromptRun run(const std::vector<int32_t>& prompt, int num_top, int max_batched_tokens, int neighbours = 0,
                         const std::vector<int32_t>& warm_prompt = {}) {
        EngineConfig config;
        config.kv_cache_bytes = 8 << 20;
        config.kv_type = KvType::kF32;  // as the plain forward's cache below
        config.max_batched_tokens = max_batched_tokens;
        auto created = Engine::create(*model_, *pool_, config);
        EXPECT_TRUE(created.is_ok());
        Engine& engine = *created.value();
        if (!warm_prompt.empty()) {
            EXPECT_TRUE(engine.add_request(EngineRequest{.id = 50, .prompt = warm_prompt, .max_tokens = 2}).is_ok());
            drain(engine, nullptr);
        }
        for (int idx = 0; idx < neighbours; ++idx) {
            EngineRequest other{.id = 100 + idx, .prompt = {5, 6, 7, static_cast<int32_t>(8 + idx)}, .max_tokens = 6};
            EXPECT_TRUE(engine.add_request(other).is_ok());
        }
        EngineRequest request{.id = 1, .prompt = prompt, .max_tokens = 3, .num_prompt_logprobs = num_top};
        request.sampling.temperature = 0.0f;
        EXPECT_TRUE(engine.add_request(request).is_ok());
        PromptRun result;
        drain(engine, &result);
        return result;
    }

    static void drain(Engine& engine, PromptRun* result) {
        bool seen_token = false;
        while (engine.has_unfinished_requests()) {
            auto outputs = engine.step();
            EXPECT_TRUE(outputs.is_ok());
            if (!outputs.is_ok()) return;
            for (RequestOutput& output : outputs.value()) {
                if (output.id != 1 || result == nullptr) continue;
                if (output.prompt_logprobs) {
                    ++result->num_reports;
                    result->with_first_token = output.token.has_value() && !seen_token;
                    result->prompt_logprobs = std::move(*output.prompt_logprobs);
                }
                seen_token = seen_token || output.token.has_value();
                if (output.timings) result->num_cached_prompt_tokens = output.timings->num_cached_prompt_tokens;
            }
        }
    }

    // log_softmax of every position's logits from one plain forward pass over `prompt`.
    static std::vector<std::vector<double>> direct_logprobs(const std::vector<int32_t>& prompt) {
        KvCache cache(model_->hparams(), 1, 64);
        TokenBatch batch;
        for (size_t idx = 0; idx < prompt.size(); ++idx) batch.add(prompt[idx], static_cast<int32_t>(idx), 0, true);
        std::vector<float> logits;
        EXPECT_TRUE(model_->forward(batch, &cache, pool_.get(), &logits).is_ok());
        const size_t vocab = static_cast<size_t>(model_->hparams().vocab_size);
        std::vector<std::vector<double>> rows;
        for (size_t row = 0; row < prompt.size(); ++row) {
            const float* begin = logits.data() + row * vocab;
            const double max_logit = *std::max_element(begin, begin + vocab);
            double total = 0.0;
            for (size_t idx = 0; idx < vocab; ++idx) total += std::exp(begin[idx] - max_logit);
            std::vector<double> logprobs(vocab);
            for (size_t idx = 0; idx < vocab; ++idx) logprobs[idx] = begin[idx] - max_logit - std::log(total);
            rows.push_back(std::move(logprobs));
        }
        return rows;
    }
};

const std::vector<int32_t> kPrompt = {1, 40, 77, 300, 12, 9, 512, 33, 8, 700, 21, 64, 5, 90, 91, 17, 3};

TEST_F(EnginePromptLogprobs, MatchTheModelsOwnLogits) {
    constexpr int kTop = 4;
    const PromptRun run_result = run(kPrompt, kTop, 2048);
    EXPECT_EQ(run_result.num_reports, 1) << "reported once";
    EXPECT_TRUE(run_result.with_first_token);
    ASSERT_EQ(run_result.prompt_logprobs.size(), kPrompt.size() - 1) << "one per prompt token after the first";
    const auto direct = direct_logprobs(kPrompt);
    for (size_t position = 1; position < kPrompt.size(); ++position) {
        SCOPED_TRACE("prompt position " + std::to_string(position));
        const std::vector<double>& expected = direct[position - 1];  // the logits after the token before it
        const TokenLogprobs& got = run_result.prompt_logprobs[position - 1];
        const int32_t token = kPrompt[position];
        EXPECT_NEAR(got.logprob, expected[static_cast<size_t>(token)], 1e-4);
        const auto num_above = std::count_if(expected.begin(), expected.end(),
                                             [&](double value) { return value > expected[static_cast<size_t>(token)]; });
        EXPECT_EQ(got.rank, num_above + 1);
        std::vector<int32_t> order(expected.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t left, int32_t right) {
            return expected[static_cast<size_t>(left)] > expected[static_cast<size_t>(right)];
        });
        ASSERT_EQ(got.top.size(), static_cast<size_t>(kTop));
        for (size_t idx = 0; idx < got.top.size(); ++idx) {
            EXPECT_EQ(got.top[idx].first, order[idx]) << "alternative " << idx;
            EXPECT_NEAR(got.top[idx].second, expected[static_cast<size_t>(order[idx])], 1e-4);
        }
    }
}

TEST_F(EnginePromptLogprobs, SameBitsInChunksBesideOthersAndAfterTheSamePromptWasCached) {
    const PromptRun alone = run(kPrompt, 2, 2048);
    ASSERT_EQ(alone.prompt_logprobs.size(), kPrompt.size() - 1);
    const auto expect_same = [&](const PromptRun& other, const char* how) {
        ASSERT_EQ(other.prompt_logprobs.size(), alone.prompt_logprobs.size()) << how;
        EXPECT_EQ(other.num_reports, 1) << how;
        for (size_t idx = 0; idx < alone.prompt_logprobs.size(); ++idx) {
            EXPECT_EQ(other.prompt_logprobs[idx].logprob, alone.prompt_logprobs[idx].logprob) << how << " " << idx;
            EXPECT_EQ(other.prompt_logprobs[idx].rank, alone.prompt_logprobs[idx].rank) << how << " " << idx;
            EXPECT_EQ(other.prompt_logprobs[idx].top, alone.prompt_logprobs[idx].top) << how << " " << idx;
        }
    };
    expect_same(run(kPrompt, 2, 3), "3-token chunks");
    expect_same(run(kPrompt, 2, 2048, 4), "beside 4 generating requests");
    expect_same(run(kPrompt, 2, 5, 4), "chunks beside generating requests");
    const PromptRun after_cached = run(kPrompt, 2, 2048, 0, kPrompt);
    expect_same(after_cached, "after the same prompt was cached");
    EXPECT_EQ(after_cached.num_cached_prompt_tokens, 0) << "no prefix-cache hit: every position's logits are needed";
}

TEST_F(EnginePromptLogprobs, OneTokenPromptHasNone) {
    const PromptRun result = run({7}, 3, 2048);
    EXPECT_EQ(result.num_reports, 1);
    EXPECT_TRUE(result.prompt_logprobs.empty());
}

TEST_F(EnginePromptLogprobs, NotAskedNotReported) {
    const PromptRun result = run(kPrompt, -1, 2048);
    EXPECT_EQ(result.num_reports, 0);
}

}  // namespace
}  // namespace tern::engine
