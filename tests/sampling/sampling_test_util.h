// Helpers shared by the sampling tests: random logit rows, draw histograms and a chi-square bound.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "sampling/sampler.h"

namespace tern::sampling_test {

// Logits drawn uniformly from [low, high) by a test-local generator (independent of the sampler's).
inline std::vector<float> random_logits(int32_t vocab_size, uint32_t seed, float low = -5.0f, float high = 5.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(low, high);
    std::vector<float> logits(vocab_size);
    for (float& logit : logits) logit = dist(rng);
    return logits;
}

// How often each token comes out of `num_draws` calls of sample() on the same logits (no accept() between).
inline std::vector<int64_t> draw_counts(Sampler& sampler, const std::vector<float>& logits, int num_draws) {
    std::vector<int64_t> counts(logits.size(), 0);
    for (int draw_idx = 0; draw_idx < num_draws; ++draw_idx) ++counts[sampler.sample(logits.data())];
    return counts;
}

// Pearson's statistic of `counts` against `probs`. Tokens with probability 0 are left out of the sum; the caller
// checks separately that they were never drawn.
inline double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& probs) {
    int64_t total = 0;
    for (int64_t count : counts) total += count;
    double statistic = 0.0;
    for (size_t idx = 0; idx < counts.size(); ++idx) {
        if (probs[idx] <= 0.0) continue;
        const double expected = probs[idx] * static_cast<double>(total);
        const double diff = static_cast<double>(counts[idx]) - expected;
        statistic += diff * diff / expected;
    }
    return statistic;
}

// The chi-square value a correct sampler exceeds with probability about 1e-6 (z = 4.7534), by the Wilson-Hilferty
// approximation, which is within a few percent for df >= 3. Draws are seeded, so a pass is reproducible, and
// each test also shows that a plausible wrong distribution lands far above this bound.
inline double chi_square_bound(int degrees_of_freedom) {
    const double df = degrees_of_freedom;
    const double a = 2.0 / (9.0 * df);
    const double root = 1.0 - a + 4.7534 * std::sqrt(a);
    return df * root * root * root;
}

}  // namespace tern::sampling_test
