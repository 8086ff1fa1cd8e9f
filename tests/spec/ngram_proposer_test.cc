// Prompt-lookup drafts: worked cases, and random sequences over small alphabets (many repeats) against a
// brute-force restatement of the rule (the longest repeated suffix, its latest earlier occurrence, what followed).
#include "spec/ngram_proposer.h"

#include <gtest/gtest.h>

#include <random>

namespace tern::spec {
namespace {

using Tokens = std::vector<int32_t>;

TEST(NgramProposer, ProposesWhatFollowedTheLatestEarlierOccurrence) {
    const NgramOptions options{.min_n = 2, .max_n = 3, .num_tokens = 3};
    // "5 6" occurs at 0 (then 7 8 9) and at 5 (then 1 2): the latest wins.
    EXPECT_EQ(propose_ngram(Tokens{5, 6, 7, 8, 9, 5, 6, 1, 2, 3, 5, 6}, options), (Tokens{1, 2, 3}));
    // A longer match wins over a later shorter one: "4 5 6" occurred at 0.
    EXPECT_EQ(propose_ngram(Tokens{4, 5, 6, 7, 8, 5, 6, 9, 4, 5, 6}, options), (Tokens{7, 8, 5}));
    // Fewer tokens than asked when the occurrence is near the end.
    EXPECT_EQ(propose_ngram(Tokens{1, 2, 3, 1, 2}, options), (Tokens{3, 1, 2}));
    EXPECT_EQ(propose_ngram(Tokens{9, 1, 2, 1, 2}, options), (Tokens{1, 2}));
    EXPECT_TRUE(propose_ngram(Tokens{1, 2, 3, 4}, options).empty());
    EXPECT_TRUE(propose_ngram(Tokens{1, 2, 3, 2}, options).empty());  // a single repeated token is below min_n
    EXPECT_TRUE(propose_ngram(Tokens{}, options).empty());
    EXPECT_TRUE(propose_ngram(Tokens{7}, options).empty());
}

// The rule restated as plainly as possible.
Tokens brute_force(const Tokens& tokens, const NgramOptions& options) {
    const int length = static_cast<int>(tokens.size());
    for (int n = options.max_n; n >= options.min_n; --n) {
        if (n >= length) continue;
        int best = -1;
        for (int start = 0; start + n < length; ++start) {
            bool same = true;
            for (int k = 0; k < n; ++k) same = same && tokens[start + k] == tokens[length - n + k];
            if (same) best = start;
        }
        if (best < 0) continue;
        Tokens out;
        for (int k = best + n; k < length && static_cast<int>(out.size()) < options.num_tokens; ++k) {
            out.push_back(tokens[k]);
        }
        return out;
    }
    return {};
}

TEST(NgramProposer, MatchesABruteForceRuleOnRandomSequences) {
    std::mt19937 rng(11);
    int num_proposed = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        const int alphabet = 2 + static_cast<int>(rng() % 6);
        Tokens tokens(rng() % 40);
        for (int32_t& token : tokens) token = static_cast<int32_t>(rng() % alphabet);
        const int min_n = 1 + static_cast<int>(rng() % 3);
        const NgramOptions options{.min_n = min_n, .max_n = min_n + static_cast<int>(rng() % 4),
                                   .num_tokens = 1 + static_cast<int>(rng() % 6)};
        const Tokens proposed = propose_ngram(tokens, options);
        ASSERT_EQ(proposed, brute_force(tokens, options)) << "trial " << trial;
        num_proposed += proposed.empty() ? 0 : 1;
    }
    EXPECT_GT(num_proposed, 1000);  // the cases must exercise proposals, not only empty answers
}

}  // namespace
}  // namespace tern::spec
