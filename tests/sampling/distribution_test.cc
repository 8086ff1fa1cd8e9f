// Empirical token frequencies against the distribution each pipeline stage should produce, computed here
// independently in double precision with a full sort.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "sampling/sampler.h"
#include "sampling/sampling_test_util.h"

namespace tern {
namespace {

using sampling_test::chi_square;
using sampling_test::chi_square_bound;
using sampling_test::draw_counts;

constexpr int kDraws = 100000;

// The distribution sample() should draw from, for a row whose penalties are already applied: top-k, softmax at
// the temperature, top-p, min-p relative to the best, renormalise. Fails the test if a cut falls so close to a
// boundary that float rounding could move it, since then the expected support would be ambiguous.
std::vector<double> expected_distribution(const std::vector<float>& logits, const SamplingParams& params) {
    const size_t vocab = logits.size();
    std::vector<size_t> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
    size_t kept = params.top_k > 0 ? std::min<size_t>(params.top_k, vocab) : vocab;

    std::vector<double> weights(vocab, 0.0);
    double total = 0.0;
    for (size_t rank = 0; rank < kept; ++rank) {
        const size_t id = order[rank];
        weights[id] = std::exp((static_cast<double>(logits[id]) - logits[order[0]]) / params.temperature);
        total += weights[id];
    }
    if (params.top_p < 1.0f) {
        double cumulative = 0.0;
        size_t rank = 0;
        while (rank < kept) {
            cumulative += weights[order[rank++]];
            EXPECT_GT(std::abs(cumulative / total - params.top_p), 1e-4) << "top_p cut too close to call";
            if (cumulative >= params.top_p * total) break;
        }
        kept = rank;
    }
    std::vector<double> probs(vocab, 0.0);
    double kept_total = 0.0;
    for (size_t rank = 0; rank < kept; ++rank) {
        const double weight = weights[order[rank]];
        EXPECT_GT(std::abs(weight - params.min_p), 1e-4) << "min_p cut too close to call";
        if (weight < params.min_p) continue;
        probs[order[rank]] = weight;
        kept_total += weight;
    }
    for (double& prob : probs) prob /= kept_total;
    return probs;
}

// Draws kDraws tokens and checks them against the expected distribution: no token outside its support, and a
// chi-square statistic under the 1e-6 bound. Returns the counts for extra checks.
std::vector<int64_t> expect_matches(const std::vector<float>& logits, const SamplingParams& params) {
    Sampler sampler(params, static_cast<int32_t>(logits.size()));
    std::vector<int64_t> counts = draw_counts(sampler, logits, kDraws);
    const std::vector<double> probs = expected_distribution(logits, params);
    int support = 0;
    for (size_t id = 0; id < probs.size(); ++id) {
        if (probs[id] > 0.0) {
            ++support;
        } else {
            EXPECT_EQ(counts[id], 0) << "token " << id << " should have been cut";
        }
    }
    EXPECT_GE(support, 4) << "the chi-square bound is only accurate from 3 degrees of freedom";
    EXPECT_LT(chi_square(counts, probs), chi_square_bound(support - 1));
    return counts;
}

const std::vector<float> kLogits = {1.2f, -0.3f, 2.5f, 0.4f, 2.1f, -1.7f, 0.9f, 1.6f, -0.8f, 0.0f, 3.0f, -2.4f};

TEST(DistributionTest, TemperatureSoftmax) {
    SamplingParams params;
    params.temperature = 0.7f;
    params.seed = 1;
    const std::vector<int64_t> counts = expect_matches(kLogits, params);

    // Power check: the same draws are far from softmax at temperature 1, a plausible bug.
    SamplingParams wrong = params;
    wrong.temperature = 1.0f;
    EXPECT_GT(chi_square(counts, expected_distribution(kLogits, wrong)), 10 * chi_square_bound(11));
}

TEST(DistributionTest, PlainSoftmaxAtTemperatureOne) {
    SamplingParams params;
    params.seed = 2;
    expect_matches(kLogits, params);
}

TEST(DistributionTest, HighTemperature) {
    SamplingParams params;
    params.temperature = 2.5f;
    params.seed = 3;
    expect_matches(kLogits, params);
}

TEST(DistributionTest, TopKRenormalises) {
    SamplingParams params;
    params.top_k = 5;
    params.temperature = 1.3f;
    params.seed = 4;
    const std::vector<int64_t> counts = expect_matches(kLogits, params);

    // Power check: a sampler that kept top-k's tokens but their full-softmax mass would put ~35% of the
    // draws on cut tokens, and plain softmax over the top 5 at T = 1 is far off too.
    SamplingParams wrong = params;
    wrong.temperature = 1.0f;
    EXPECT_GT(chi_square(counts, expected_distribution(kLogits, wrong)), 10 * chi_square_bound(4));
}

TEST(DistributionTest, TopPAfterTemperature) {
    SamplingParams params;
    params.top_p = 0.8f;
    params.temperature = 1.5f;
    params.seed = 5;
    const std::vector<int64_t> counts = expect_matches(kLogits, params);

    // Power check: applying top-p to the T = 1 probabilities (llama.cpp's chain order) keeps 4 tokens, not 6.
    SamplingParams wrong = params;
    wrong.temperature = 1.0f;
    const std::vector<double> wrong_probs = expected_distribution(kLogits, wrong);
    EXPECT_GT(chi_square(counts, wrong_probs), 10 * chi_square_bound(5));
}

TEST(DistributionTest, MinPRelativeToBest) {
    SamplingParams params;
    params.min_p = 0.15f;
    params.seed = 6;
    expect_matches(kLogits, params);
}

TEST(DistributionTest, AllStagesTogether) {
    SamplingParams params;
    params.top_k = 9;
    params.temperature = 1.6f;
    params.top_p = 0.9f;
    params.min_p = 0.12f;
    params.seed = 7;
    expect_matches(kLogits, params);
}

TEST(DistributionTest, PenalisedRow) {
    SamplingParams params;
    params.repetition_penalty = 1.8f;
    params.presence_penalty = 0.4f;
    params.frequency_penalty = 0.3f;
    params.temperature = 0.9f;
    params.seed = 8;
    Sampler sampler(params, static_cast<int32_t>(kLogits.size()));
    sampler.accept_prompt({10, 5});
    sampler.accept(2);
    sampler.accept(2);
    sampler.accept(4);
    std::vector<int64_t> counts = draw_counts(sampler, kLogits, kDraws);

    // Hand-applied penalties: 10 and 5 prompt only; 2 twice and 4 once in the output.
    std::vector<float> expected_logits = kLogits;
    expected_logits[10] = 3.0f / 1.8f;
    expected_logits[5] = -1.7f * 1.8f;
    expected_logits[2] = 2.5f / 1.8f - (0.4f + 0.3f * 2);
    expected_logits[4] = 2.1f / 1.8f - (0.4f + 0.3f * 1);
    const std::vector<double> probs = expected_distribution(expected_logits, params);
    EXPECT_LT(chi_square(counts, probs), chi_square_bound(11));
    EXPECT_GT(chi_square(counts, expected_distribution(kLogits, params)), 10 * chi_square_bound(11));
}

// Speculative decoding's draft check: whatever the draft, the token it returns is distributed as sample()'s, and
// the draft is accepted with its probability under that distribution. Cases: the likeliest token, a middling one,
// one top-k cuts (never accepted), and under top-p.
TEST(DistributionTest, DraftCheckKeepsTheDistribution) {
    struct Case {
        int32_t draft;
        int top_k;
        float top_p;
    };
    const Case cases[] = {{10, 0, 1.0f}, {4, 0, 1.0f}, {5, 6, 1.0f}, {2, 0, 0.8f}};
    for (const Case& c : cases) {
        SCOPED_TRACE("draft " + std::to_string(c.draft));
        SamplingParams params;
        params.temperature = 0.9f;
        params.top_k = c.top_k;
        params.top_p = c.top_p;
        params.seed = 21;
        Sampler sampler(params, static_cast<int32_t>(kLogits.size()));
        std::vector<int64_t> counts(kLogits.size(), 0);
        int64_t num_accepted = 0;
        for (int draw_idx = 0; draw_idx < kDraws; ++draw_idx) {
            const Sampler::DraftCheck check = sampler.check_draft(kLogits.data(), c.draft);
            ++counts[check.token];
            num_accepted += check.accepted ? 1 : 0;
            EXPECT_TRUE(!check.accepted || check.token == c.draft);
        }
        const std::vector<double> probs = expected_distribution(kLogits, params);
        int support = 0;
        for (size_t id = 0; id < probs.size(); ++id) {
            support += probs[id] > 0.0 ? 1 : 0;
            if (probs[id] == 0.0) {
                EXPECT_EQ(counts[id], 0) << "token " << id << " should have been cut";
            }
        }
        EXPECT_LT(chi_square(counts, probs), chi_square_bound(support - 1));
        // Acceptance is a Bernoulli(p(draft)) per check: within 5 standard deviations.
        const double p = probs[static_cast<size_t>(c.draft)];
        EXPECT_NEAR(static_cast<double>(num_accepted) / kDraws, p, 5 * std::sqrt(p * (1 - p) / kDraws) + 1e-9);
        // A plausible mistake, a rejection that redraws from the whole distribution (the draft included), would
        // give the draft p + (1 - p) p: far outside the bound whenever p is not tiny.
        if (p > 0.05) {
            std::vector<double> wrong = probs;
            for (size_t id = 0; id < wrong.size(); ++id) wrong[id] *= 1 - p;
            wrong[static_cast<size_t>(c.draft)] += p;
            EXPECT_GT(chi_square(counts, wrong), 10 * chi_square_bound(support - 1));
        }
    }
}

// Under greedy decoding the check is the argmax, accepted exactly when the draft is it.
TEST(DistributionTest, GreedyDraftCheckIsTheArgmax) {
    SamplingParams params;
    params.temperature = 0.0f;
    Sampler sampler(params, static_cast<int32_t>(kLogits.size()));
    const int32_t best = sampler.sample(kLogits.data());
    for (int32_t draft = 0; draft < static_cast<int32_t>(kLogits.size()); ++draft) {
        const Sampler::DraftCheck check = sampler.check_draft(kLogits.data(), draft);
        EXPECT_EQ(check.token, best);
        EXPECT_EQ(check.accepted, draft == best);
    }
}

}  // namespace
}  // namespace tern
