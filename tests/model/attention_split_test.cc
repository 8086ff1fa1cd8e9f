// AttentionSplit: the batch's tokens grouped into runs of consecutive positions of one sequence, and one range of
// (run, KV head) units per thread, each reading about as many cached keys, in order and covering every unit once.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "model/attention_split.h"

namespace tern {
namespace {

// The keys (plus the per-token overhead the split assumes, 32) each part reads.
std::vector<int64_t> part_costs(const AttentionSplit& split, const std::vector<int32_t>& positions,
                                int64_t kv_heads) {
    std::vector<int64_t> costs;
    for (int64_t part = 0; part < split.num_parts(); ++part) {
        int64_t cost = 0;
        for (int64_t unit = split.part_begin(part); unit < split.part_begin(part + 1); ++unit) {
            const QueryRun& run = split.runs()[static_cast<size_t>(unit / kv_heads)];
            for (int64_t token = run.first_token; token < run.first_token + run.num_tokens; ++token) {
                cost += positions[static_cast<size_t>(token)] + 1 + 32;
            }
        }
        costs.push_back(cost);
    }
    return costs;
}

TEST(AttentionSplit, CausalPrefillPartsReadAsManyKeys) {
    std::vector<int32_t> positions(2000);
    std::iota(positions.begin(), positions.end(), 0);
    const std::vector<int32_t> slots(2000, 0);
    AttentionSplit split;
    for (int num_parts : {2, 3, 8}) {
        split.build(positions, slots, 4, num_parts);
        ASSERT_EQ(split.runs().size(), 500u);  // runs of four consecutive tokens
        ASSERT_EQ(split.num_parts(), num_parts);
        EXPECT_EQ(split.part_begin(0), 0);
        EXPECT_EQ(split.part_begin(num_parts), 500 * 4);
        const std::vector<int64_t> costs = part_costs(split, positions, 4);
        const int64_t total = std::accumulate(costs.begin(), costs.end(), int64_t{0});
        // Within one unit (a run of four tokens near the end: about 8100 keys) of an even share.
        for (int64_t cost : costs) {
            EXPECT_NEAR(static_cast<double>(cost), static_cast<double>(total) / num_parts, 8200.0);
        }
    }
    // An even split by count would give the first of two threads a quarter of the keys.
    split.build(positions, slots, 4, 2);
    EXPECT_GT(split.part_begin(1), 500 * 4 / 2);
}

TEST(AttentionSplit, RunsFollowSequencesAndPositions) {
    AttentionSplit split;
    // Two decodes, a chunk of 5 of sequence 2 (positions 10..14), then a token of sequence 2 that does not follow.
    split.build({7, 30, 10, 11, 12, 13, 14, 40}, {0, 1, 2, 2, 2, 2, 2, 2}, 1, 1);
    const std::vector<std::pair<int64_t, int64_t>> expected = {{0, 1}, {1, 1}, {2, 4}, {6, 1}, {7, 1}};
    ASSERT_EQ(split.runs().size(), expected.size());
    for (size_t idx = 0; idx < expected.size(); ++idx) {
        EXPECT_EQ(split.runs()[idx].first_token, expected[idx].first);
        EXPECT_EQ(split.runs()[idx].num_tokens, expected[idx].second);
    }
    // Consecutive positions of different sequences stay apart.
    split.build({5, 6}, {0, 1}, 1, 1);
    EXPECT_EQ(split.runs().size(), 2u);
}

TEST(AttentionSplit, OneDecodeTokenSplitsItsHeads) {
    AttentionSplit split;
    split.build({700}, {0}, 4, 2);
    EXPECT_EQ(std::vector<int64_t>({split.part_begin(0), split.part_begin(1), split.part_begin(2)}),
              (std::vector<int64_t>{0, 2, 4}));
    split.build({700}, {0}, 4, 1);
    EXPECT_EQ(std::vector<int64_t>({split.part_begin(0), split.part_begin(1)}), (std::vector<int64_t>{0, 4}));
    // More parts than units: the extra parts are empty, none is out of range.
    split.build({5}, {0}, 2, 4);
    EXPECT_EQ(split.part_begin(0), 0);
    EXPECT_EQ(split.part_begin(4), 2);
    for (int64_t part = 1; part <= 4; ++part) EXPECT_LE(split.part_begin(part - 1), split.part_begin(part));
}

}  // namespace
}  // namespace tern
