// Workspace::split_attention: one range of (token, KV head) units per thread, each reading about as many cached
// keys, in order and covering every unit once.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "model/workspace.h"

namespace tern {
namespace {

// The keys (plus the per-unit overhead the split assumes, 32) each part reads.
std::vector<int64_t> part_costs(const std::vector<int64_t>& split, const std::vector<int32_t>& positions,
                                int64_t kv_heads) {
    std::vector<int64_t> costs;
    for (size_t part = 0; part + 1 < split.size(); ++part) {
        int64_t cost = 0;
        for (int64_t unit = split[part]; unit < split[part + 1]; ++unit) cost += positions[unit / kv_heads] + 1 + 32;
        costs.push_back(cost);
    }
    return costs;
}

TEST(AttentionSplit, CausalPrefillPartsReadAsManyKeys) {
    std::vector<int32_t> positions(2000);
    std::iota(positions.begin(), positions.end(), 0);
    Model::Workspace workspace;
    for (int num_parts : {2, 3, 8}) {
        workspace.split_attention(positions, 4, num_parts);
        ASSERT_EQ(workspace.attention_split.size(), static_cast<size_t>(num_parts + 1));
        EXPECT_EQ(workspace.attention_split.front(), 0);
        EXPECT_EQ(workspace.attention_split.back(), 2000 * 4);
        const std::vector<int64_t> costs = part_costs(workspace.attention_split, positions, 4);
        const int64_t total = std::accumulate(costs.begin(), costs.end(), int64_t{0});
        for (int64_t cost : costs) EXPECT_NEAR(static_cast<double>(cost), static_cast<double>(total) / num_parts, 2100.0);
    }
    // An even split by count would give the first of two threads a quarter of the keys.
    workspace.split_attention(positions, 4, 2);
    EXPECT_GT(workspace.attention_split[1], 2000 * 4 / 2);
}

TEST(AttentionSplit, OneDecodeTokenSplitsItsHeads) {
    Model::Workspace workspace;
    workspace.split_attention({700}, 4, 2);
    EXPECT_EQ(workspace.attention_split, (std::vector<int64_t>{0, 2, 4}));
    workspace.split_attention({700}, 4, 1);
    EXPECT_EQ(workspace.attention_split, (std::vector<int64_t>{0, 4}));
    // More parts than units: the extra parts are empty, none is out of range.
    workspace.split_attention({5}, 2, 4);
    EXPECT_EQ(workspace.attention_split.front(), 0);
    EXPECT_EQ(workspace.attention_split.back(), 2);
    for (size_t part = 1; part < workspace.attention_split.size(); ++part) {
        EXPECT_LE(workspace.attention_split[part - 1], workspace.attention_split[part]);
    }
}

}  // namespace
}  // namespace tern
