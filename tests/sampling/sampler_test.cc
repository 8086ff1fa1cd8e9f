#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "sampling/sampling_test_util.h"

namespace tern {
namespace {

using sampling_test::draw_counts;
using sampling_test::random_logits;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

SamplingParams greedy_params() {
    SamplingParams params;
    params.temperature = 0.0f;
    return params;
}

TEST(SamplerTest, GreedyReturnsArgmax) {
    for (uint32_t seed = 0; seed < 20; ++seed) {
        std::vector<float> logits = random_logits(1000, seed);
        Sampler sampler(greedy_params(), 1000);
        const auto expected = std::max_element(logits.begin(), logits.end()) - logits.begin();
        EXPECT_EQ(sampler.sample(logits.data()), expected);
    }
}

TEST(SamplerTest, GreedyTiesGoToLowestId) {
    std::vector<float> logits = {1.0f, 4.0f, 2.0f, 4.0f, 4.0f};
    Sampler sampler(greedy_params(), 5);
    EXPECT_EQ(sampler.sample(logits.data()), 1);
}

TEST(SamplerTest, SameSeedSameSequenceDifferentSeedsDiffer) {
    auto run = [](uint64_t seed) {
        SamplingParams params;
        params.seed = seed;
        params.temperature = 0.9f;
        params.top_k = 50;
        params.top_p = 0.95f;
        params.repetition_penalty = 1.1f;
        params.frequency_penalty = 0.3f;
        Sampler sampler(params, 200);
        sampler.accept_prompt({1, 2, 3});
        std::vector<int32_t> tokens;
        for (uint32_t step = 0; step < 100; ++step) {
            std::vector<float> logits = random_logits(200, step, -1.0f, 1.0f);
            tokens.push_back(sampler.sample(logits.data()));
            sampler.accept(tokens.back());
        }
        return tokens;
    };
    const std::vector<int32_t> first = run(42);
    EXPECT_EQ(run(42), first);
    // With ~50 roughly equally likely tokens per step, two seeds agreeing on 100 steps has probability ~50^-100.
    EXPECT_NE(run(43), first);
    EXPECT_NE(run(0), first);
}

// The documented draw: u = (mt19937_64() >> 11) * 2^-53, then the first token whose cumulative weight exceeds
// u * total. With equal logits that is token floor(u * V), which pins the sequence for a seed on every platform.
TEST(SamplerTest, DrawFollowsDocumentedPrng) {
    constexpr int32_t kVocab = 10;
    std::vector<float> logits(kVocab, 0.5f);
    SamplingParams params;
    params.seed = 1234;
    Sampler sampler(params, kVocab);
    std::mt19937_64 reference(1234);
    for (int step = 0; step < 200; ++step) {
        const double unit = static_cast<double>(reference() >> 11) * 0x1.0p-53;
        EXPECT_EQ(sampler.sample(logits.data()), static_cast<int32_t>(unit * kVocab)) << "step " << step;
    }
}

TEST(SamplerTest, TopKOneEqualsGreedy) {
    SamplingParams params;
    params.temperature = 1.7f;
    params.top_k = 1;
    params.seed = 7;
    Sampler top1(params, 3000);
    Sampler greedy(greedy_params(), 3000);
    for (uint32_t step = 0; step < 50; ++step) {
        std::vector<float> logits = random_logits(3000, 100 + step, -2.0f, 2.0f);
        if (step % 5 == 0) logits[step] = logits[2999] = 9.0f;  // a tie at the top: both pick the lower id
        EXPECT_EQ(top1.sample(logits.data()), greedy.sample(logits.data())) << "step " << step;
    }
}

TEST(SamplerTest, TinyTopPEqualsGreedy) {
    SamplingParams params;
    params.temperature = 1.3f;
    params.top_p = 1e-6f;
    params.seed = 11;
    Sampler tiny(params, 3000);
    Sampler greedy(greedy_params(), 3000);
    for (uint32_t step = 0; step < 50; ++step) {
        std::vector<float> logits = random_logits(3000, 200 + step, -2.0f, 0.2f);
        if (step % 5 == 0) {
            // A tie at the top, and at id 5 a logit one ulp lower whose weight exp(-2e-8) rounds to 1.0f too:
            // ranking by weight instead of logit would wrongly prefer id 5.
            logits[10] = logits[20] = 0.25f;
            logits[5] = std::nextafter(0.25f, 0.0f);
        }
        EXPECT_EQ(tiny.sample(logits.data()), greedy.sample(logits.data())) << "step " << step;
    }
}

TEST(SamplerTest, TopKTiesAtTheCutGoToLowestIds) {
    SamplingParams params;
    params.top_k = 2;
    Sampler sampler(params, 5);
    std::vector<float> logits = {1.0f, 3.0f, 3.0f, 3.0f, 0.0f};
    std::vector<int64_t> counts = draw_counts(sampler, logits, 2000);
    EXPECT_GT(counts[1], 800);
    EXPECT_GT(counts[2], 800);
    EXPECT_EQ(counts[0] + counts[3] + counts[4], 0);
}

TEST(SamplerTest, MinPExcludesUnlikelyTokens) {
    // Probabilities 0.5, 0.3, 0.15, 0.05: min_p = 0.2 keeps p >= 0.1, so token 3 must never come out.
    std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
    SamplingParams params;
    params.min_p = 0.2f;
    Sampler sampler(params, 4);
    std::vector<int64_t> counts = draw_counts(sampler, logits, 20000);
    EXPECT_EQ(counts[3], 0);
    for (int token = 0; token < 3; ++token) EXPECT_GT(counts[token], 2000) << "token " << token;

    SamplingParams off;
    Sampler control(off, 4);
    EXPECT_GT(draw_counts(control, logits, 20000)[3], 500);  // without min_p token 3 is drawn ~1000 times
}

TEST(SamplerTest, TopKOnLargeVocabularyDrawsOnlyTheTopK) {
    constexpr int32_t kVocab = 152064;
    std::vector<float> logits = random_logits(kVocab, 5, -10.0f, 10.0f);
    std::vector<int32_t> order(kVocab);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    const std::set<int32_t> top40(order.begin(), order.begin() + 40);

    SamplingParams params;
    params.top_k = 40;
    params.temperature = 5.0f;  // flat enough that many of the 40 come out
    Sampler sampler(params, kVocab);
    std::set<int32_t> seen;
    for (int step = 0; step < 300; ++step) {
        const int32_t token = sampler.sample(logits.data());
        ASSERT_TRUE(top40.count(token)) << "token " << token << " is outside the top 40";
        seen.insert(token);
    }
    EXPECT_GT(seen.size(), 20u);
}

// 300 equally likely tokens at scattered ids, the rest negligible. top_p = 0.505 needs ceil(0.505 * 300) = 152
// of them, and ties go to the lowest ids, so exactly the 152 lowest ids survive; that also takes top-p past its
// first sorted slice.
TEST(SamplerTest, TopPKeepsTheSmallestNucleusWithLowestIdsOnTies) {
    constexpr int32_t kVocab = 5000;
    std::vector<int32_t> ids(kVocab);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(3));
    std::vector<int32_t> likely(ids.begin(), ids.begin() + 300);
    std::sort(likely.begin(), likely.end());
    std::vector<float> logits(kVocab, -40.0f);
    for (int32_t id : likely) logits[id] = 0.0f;
    const std::set<int32_t> nucleus(likely.begin(), likely.begin() + 152);

    SamplingParams params;
    params.top_p = 0.505f;
    Sampler sampler(params, kVocab);
    std::vector<int64_t> counts = draw_counts(sampler, logits, 20000);
    std::vector<double> probs(kVocab, 0.0);
    for (int32_t id = 0; id < kVocab; ++id) {
        if (nucleus.count(id)) {
            EXPECT_GT(counts[id], 0) << "nucleus token " << id << " never drawn";
            probs[id] = 1.0 / 152.0;
        } else {
            EXPECT_EQ(counts[id], 0) << "token " << id << " is outside the nucleus";
        }
    }
    EXPECT_LT(sampling_test::chi_square(counts, probs), sampling_test::chi_square_bound(151));
}

TEST(SamplerTest, NonFiniteLogits) {
    // NaN and -inf are never picked; +inf always wins.
    std::vector<float> logits = {kNaN, 1.0f, -kInf, 0.5f, kNaN};
    Sampler greedy(greedy_params(), 5);
    EXPECT_EQ(greedy.sample(logits.data()), 1);
    Sampler sampler(SamplingParams{}, 5);
    std::vector<int64_t> counts = draw_counts(sampler, logits, 2000);
    EXPECT_EQ(counts[0] + counts[2] + counts[4], 0);
    EXPECT_GT(counts[1], 0);
    EXPECT_GT(counts[3], 0);

    logits[3] = kInf;
    EXPECT_EQ(greedy.sample(logits.data()), 3);
    counts = draw_counts(sampler, logits, 200);
    EXPECT_EQ(counts[3], 200);
}

TEST(SamplerDeathTest, RowWithoutFiniteLogitIsABug) {
    std::vector<float> logits = {-kInf, kNaN, -kInf};
    Sampler sampler(SamplingParams{}, 3);
    EXPECT_DEATH(sampler.sample(logits.data()), "nothing can be sampled");
}

TEST(SamplerTest, TinyTemperatureDoesNotOverflow) {
    SamplingParams params;
    params.temperature = 1e-30f;
    Sampler sampler(params, 4);
    std::vector<float> logits = {1.0f, 3.0f, 2.999f, -1.0f};
    EXPECT_EQ(draw_counts(sampler, logits, 100)[1], 100);
}

TEST(SamplerTest, TopLogprobsMatchLogSoftmax) {
    constexpr int32_t kVocab = 1000;
    std::vector<float> logits = random_logits(kVocab, 9);
    logits[500] = logits[700] = 6.0f;  // the two best tie: 500 must come first
    double max_logit = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float logit : logits) sum += std::exp(logit - max_logit);

    SamplingParams params;
    params.repetition_penalty = 2.0f;  // top_logprobs reports the raw model distribution: no penalties
    params.temperature = 0.5f;         // ...and no temperature
    Sampler sampler(params, kVocab);
    sampler.accept(500);
    auto top = sampler.top_logprobs(logits.data(), 5);
    ASSERT_EQ(top.size(), 5u);
    EXPECT_EQ(top[0].first, 500);
    EXPECT_EQ(top[1].first, 700);
    for (size_t rank = 0; rank < top.size(); ++rank) {
        const auto [id, logprob] = top[rank];
        EXPECT_NEAR(logprob, logits[id] - max_logit - std::log(sum), 1e-5) << "rank " << rank;
        if (rank > 0) {
            EXPECT_LE(logprob, top[rank - 1].second);
        }
    }
    std::vector<float> sorted = logits;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    EXPECT_EQ(logits[top[4].first], sorted[4]);

    auto all = sampler.top_logprobs(logits.data(), kVocab + 10);
    ASSERT_EQ(all.size(), static_cast<size_t>(kVocab));
    double total = 0.0;
    for (const auto& entry : all) total += std::exp(static_cast<double>(entry.second));
    EXPECT_NEAR(total, 1.0, 1e-4);
    EXPECT_TRUE(sampler.top_logprobs(logits.data(), 0).empty());
    EXPECT_TRUE(sampler.top_logprobs(logits.data(), -3).empty());
}

}  // namespace
}  // namespace tern
