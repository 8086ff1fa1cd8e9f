// KvManager: block tables, prefix hits and eviction order with exact block ids (in the manner of vLLM's
// tests/v1/core/test_prefix_caching.py), transactional allocation, capacity from a memory budget.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kv/kv_manager.h"

namespace tern::kv {
namespace {

using Ids = std::vector<BlockId>;
using Tokens = std::vector<TokenId>;

Tokens token_range(TokenId begin, TokenId end) {
    Tokens tokens(end - begin);
    std::iota(tokens.begin(), tokens.end(), begin);
    return tokens;
}

Tokens concat(Tokens head, const Tokens& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
}

Ids table(const KvManager& manager, RequestId request_id) {
    std::span<const BlockId> ids = manager.block_ids(request_id);
    return Ids(ids.begin(), ids.end());
}

// Allocates slots and records that the step computing them ran, as the scheduler does after the forward pass.
std::optional<Ids> allocate_computed(KvManager& manager, RequestId request_id, const Tokens& tokens,
                                     int num_computed_tokens, int num_new_tokens, const ComputedBlocks& hit = {}) {
    std::optional<Ids> ids = manager.allocate_slots(request_id, tokens, num_computed_tokens, num_new_tokens, hit);
    if (ids) manager.cache_computed_blocks(request_id, tokens, num_computed_tokens + hit.num_tokens + num_new_tokens);
    return ids;
}

KvManager make_manager(int num_blocks, bool enable_prefix_caching = true) {
    return KvManager(KvCacheConfig{.block_size = 4, .num_blocks = num_blocks,
                                   .enable_prefix_caching = enable_prefix_caching});
}

TEST(KvManagerTest, SharedPrefixIsReferencedByBothRequests) {
    KvManager manager = make_manager(11);
    Tokens prompt0 = token_range(0, 10);  // blocks [0..3] [4..7] [8, 9]
    EXPECT_TRUE(manager.get_computed_blocks(prompt0).block_ids().empty());
    EXPECT_EQ(allocate_computed(manager, 0, prompt0, 0, 10), std::optional<Ids>(Ids{1, 2, 3}));
    EXPECT_TRUE(manager.pool().block_hash(2).has_value());   // full and computed: cached
    EXPECT_FALSE(manager.pool().block_hash(3).has_value());  // partial

    Tokens prompt1 = concat(token_range(0, 8), {100, 101, 102});
    ComputedBlocks hit = manager.get_computed_blocks(prompt1);
    EXPECT_EQ(hit.block_ids(), (Ids{1, 2}));
    EXPECT_EQ(hit.num_tokens, 8);
    EXPECT_EQ(allocate_computed(manager, 1, prompt1, 0, 3, hit), std::optional<Ids>(Ids{4}));
    EXPECT_EQ(table(manager, 1), (Ids{1, 2, 4}));
    EXPECT_EQ(manager.pool().ref_count(1), 2);
    EXPECT_EQ(manager.pool().ref_count(2), 2);
    EXPECT_EQ(manager.pool().ref_count(3), 1);
    EXPECT_EQ(manager.pool().ref_count(4), 1);
    EXPECT_EQ(manager.prefix_cache_stats().num_queries, 2);
    EXPECT_EQ(manager.prefix_cache_stats().num_queried_tokens, 21);
    EXPECT_EQ(manager.prefix_cache_stats().num_hit_tokens, 8);
    EXPECT_TRUE(manager.verify().is_ok()) << manager.verify().message();

    manager.free(0);  // 2 and 1 are still held by request 1
    EXPECT_EQ(manager.pool().free_queue(), (Ids{5, 6, 7, 8, 9, 10, 3}));
    manager.free(1);  // tail first: 4, then the shared prefix 2, 1
    EXPECT_EQ(manager.pool().free_queue(), (Ids{5, 6, 7, 8, 9, 10, 3, 4, 2, 1}));
    EXPECT_EQ(manager.pool().num_cached_blocks(), 2);
    EXPECT_TRUE(manager.verify().is_ok()) << manager.verify().message();
}

TEST(KvManagerTest, DecodeFillsTheLastBlockThenAllocatesAndCaches) {
    KvManager manager = make_manager(11);
    Tokens prompt = token_range(0, 9);
    ASSERT_EQ(allocate_computed(manager, 0, prompt, 0, 9), std::optional<Ids>(Ids{1, 2, 3}));
    for (TokenId token = 9; token < 12; ++token) {  // tokens 9..11 fit in block 3
        prompt.push_back(token);
        EXPECT_EQ(allocate_computed(manager, 0, prompt, token, 1), std::optional<Ids>(Ids{}));
    }
    EXPECT_TRUE(manager.pool().block_hash(3).has_value());
    prompt.push_back(12);
    EXPECT_EQ(allocate_computed(manager, 0, prompt, 12, 1), std::optional<Ids>(Ids{4}));
    EXPECT_EQ(table(manager, 0), (Ids{1, 2, 3, 4}));
    // The decoded block is found by a later request with the same tokens.
    EXPECT_EQ(manager.get_computed_blocks(prompt).block_ids(), (Ids{1, 2, 3}));
}

TEST(KvManagerTest, TailBlocksAreEvictedFirst) {
    KvManager manager = make_manager(11);
    Tokens prompt = token_range(0, 12);
    ASSERT_EQ(allocate_computed(manager, 0, prompt, 0, 12), std::optional<Ids>(Ids{1, 2, 3}));
    manager.free(0);
    EXPECT_EQ(manager.pool().free_queue(), (Ids{4, 5, 6, 7, 8, 9, 10, 3, 2, 1}));
    Tokens probe = concat(prompt, {99});
    EXPECT_EQ(manager.get_computed_blocks(probe).block_ids(), (Ids{1, 2, 3}));

    Tokens other = token_range(1000, 1028);
    EXPECT_EQ(allocate_computed(manager, 1, other, 0, 28), std::optional<Ids>(Ids{4, 5, 6, 7, 8, 9, 10}));
    EXPECT_EQ(manager.get_computed_blocks(probe).block_ids(), (Ids{1, 2, 3}));  // only never-cached blocks used
    other.insert(other.end(), {1, 2, 3, 4});
    EXPECT_EQ(allocate_computed(manager, 1, other, 28, 4), std::optional<Ids>(Ids{3}));
    EXPECT_EQ(manager.get_computed_blocks(probe).block_ids(), (Ids{1, 2}));
    other.insert(other.end(), {5, 6, 7, 8});
    EXPECT_EQ(allocate_computed(manager, 1, other, 32, 4), std::optional<Ids>(Ids{2}));
    EXPECT_EQ(manager.get_computed_blocks(probe).block_ids(), (Ids{1}));
    EXPECT_EQ(manager.pool().stats().num_evicted_blocks, 2);
    EXPECT_EQ(manager.pool().num_cached_blocks(), 1 + 9);  // block 1 and request 1's nine full blocks
}

TEST(KvManagerTest, NeverHitsTheWholePrompt) {
    KvManager manager = make_manager(11);
    Tokens prompt = token_range(0, 8);
    ASSERT_EQ(allocate_computed(manager, 0, prompt, 0, 8), std::optional<Ids>(Ids{1, 2}));
    ComputedBlocks hit = manager.get_computed_blocks(prompt);  // the last token must be computed
    EXPECT_EQ(hit.block_ids(), (Ids{1}));
    EXPECT_EQ(hit.num_tokens, 4);
    EXPECT_EQ(allocate_computed(manager, 1, prompt, 0, 4, hit), std::optional<Ids>(Ids{3}));
    EXPECT_EQ(manager.get_computed_blocks(concat(prompt, {8})).block_ids(), (Ids{1, 2}));
}

TEST(KvManagerTest, SameTokensAfterADifferentPrefixDoNotHit) {
    KvManager manager = make_manager(11);
    Tokens a = concat(token_range(0, 8), {42});
    Tokens b = concat(concat(token_range(50, 54), token_range(4, 8)), {42});  // same second block as a
    Tokens c = concat(concat(token_range(0, 4), token_range(60, 64)), {42});  // same first block as a
    ASSERT_TRUE(allocate_computed(manager, 0, a, 0, 9).has_value());
    EXPECT_TRUE(manager.get_computed_blocks(b).block_ids().empty());
    ASSERT_EQ(allocate_computed(manager, 1, b, 0, 9), std::optional<Ids>(Ids{4, 5, 6}));
    EXPECT_EQ(manager.pool().num_cached_blocks(), 4);
    EXPECT_EQ(manager.get_computed_blocks(c).block_ids(), (Ids{1}));
}

TEST(KvManagerTest, AllocationFailureLeavesNoTrace) {
    KvManager manager = make_manager(6);  // 5 usable blocks
    Tokens prompt0 = token_range(0, 9);
    ASSERT_EQ(allocate_computed(manager, 0, prompt0, 0, 9), std::optional<Ids>(Ids{1, 2, 3}));
    manager.free(0);
    ASSERT_EQ(allocate_computed(manager, 1, token_range(500, 504), 0, 4), std::optional<Ids>(Ids{4}));
    ASSERT_EQ(manager.pool().free_queue(), (Ids{5, 3, 2, 1}));

    // 20 tokens need 5 blocks: 2 hit + 3 new, but the 2 hit blocks are among the 4 free ones.
    Tokens prompt2 = concat(token_range(0, 8), token_range(700, 712));
    ComputedBlocks hit = manager.get_computed_blocks(prompt2);
    ASSERT_EQ(hit.block_ids(), (Ids{1, 2}));
    BlockPoolStats stats_before = manager.pool().stats();
    EXPECT_EQ(allocate_computed(manager, 2, prompt2, 0, 12, hit), std::nullopt);
    EXPECT_EQ(manager.pool().free_queue(), (Ids{5, 3, 2, 1}));
    EXPECT_EQ(manager.pool().ref_count(1), 0);
    EXPECT_EQ(manager.pool().num_cached_blocks(), 3);  // 1, 2 and request 1's block 4
    EXPECT_EQ(manager.pool().stats().num_allocated_blocks, stats_before.num_allocated_blocks);
    EXPECT_FALSE(manager.has_request(2));
    EXPECT_TRUE(manager.verify().is_ok()) << manager.verify().message();

    // Growing an existing request fails the same way and leaves its table alone.
    Tokens prompt1 = token_range(500, 524);
    EXPECT_EQ(allocate_computed(manager, 1, prompt1, 4, 20), std::nullopt);
    EXPECT_EQ(table(manager, 1), (Ids{4}));

    // 16 tokens fit: the hit blocks leave the queue first, so 5 and 3 are allocated (in ascending order), not 2
    // and 1.
    prompt2.resize(16);
    EXPECT_EQ(allocate_computed(manager, 2, prompt2, 0, 8, hit), std::optional<Ids>(Ids{3, 5}));
    EXPECT_EQ(table(manager, 2), (Ids{1, 2, 3, 5}));
    EXPECT_EQ(manager.num_free_blocks(), 0);
    EXPECT_DOUBLE_EQ(manager.usage(), 1.0);
    EXPECT_TRUE(manager.verify().is_ok()) << manager.verify().message();
}

TEST(KvManagerTest, IdenticalPromptsInOneStepDoNotShareButDoNotBreak) {
    KvManager manager = make_manager(11);
    Tokens prompt = token_range(0, 9);
    ComputedBlocks hit0 = manager.get_computed_blocks(prompt);
    ComputedBlocks hit1 = manager.get_computed_blocks(prompt);
    EXPECT_EQ(allocate_computed(manager, 0, prompt, 0, 9, hit0), std::optional<Ids>(Ids{1, 2, 3}));
    EXPECT_EQ(allocate_computed(manager, 1, prompt, 0, 9, hit1), std::optional<Ids>(Ids{4, 5, 6}));
    EXPECT_EQ(manager.pool().num_cached_blocks(), 2);  // request 1's copies stay uncached
    EXPECT_EQ(manager.get_computed_blocks(prompt).block_ids(), (Ids{1, 2}));
    manager.free(0);
    manager.free(1);
    EXPECT_EQ(manager.num_free_blocks(), 10);
    EXPECT_TRUE(manager.verify().is_ok()) << manager.verify().message();
}

TEST(KvManagerTest, DisabledPrefixCachingNeverHits) {
    KvManager manager = make_manager(11, /*enable_prefix_caching=*/false);
    Tokens prompt = token_range(0, 9);
    ASSERT_EQ(allocate_computed(manager, 0, prompt, 0, 9), std::optional<Ids>(Ids{1, 2, 3}));
    EXPECT_TRUE(manager.get_computed_blocks(prompt).block_ids().empty());
    EXPECT_EQ(manager.pool().num_cached_blocks(), 0);
    EXPECT_EQ(manager.prefix_cache_stats().num_queries, 0);
    manager.free(0);
    EXPECT_TRUE(manager.get_computed_blocks(prompt).block_ids().empty());
    EXPECT_TRUE(manager.verify().is_ok()) << manager.verify().message();
}

TEST(KvManagerTest, FreeingAnUnknownRequestIsANoOp) {
    KvManager manager = make_manager(4);
    manager.free(7);
    EXPECT_EQ(manager.num_free_blocks(), 3);
    EXPECT_TRUE(manager.block_ids(7).empty());
}

TEST(KvManagerDeathTest, StalePrefixHitFailsTheCheck) {
    KvManager manager = make_manager(3);  // 2 usable blocks
    Tokens prompt = token_range(0, 5);
    ASSERT_TRUE(allocate_computed(manager, 0, prompt, 0, 5).has_value());
    manager.free(0);
    ComputedBlocks hit = manager.get_computed_blocks(prompt);
    ASSERT_EQ(hit.block_ids(), (Ids{1}));
    ASSERT_EQ(allocate_computed(manager, 1, token_range(100, 108), 0, 8), std::optional<Ids>(Ids{1, 2}));  // evicts 1
    EXPECT_DEATH(allocate_computed(manager, 2, prompt, 0, 1, hit), "stale prefix hit");
}

TEST(KvCapacityTest, BlocksFromAMemoryBudget) {
    Result<int> num_blocks = num_blocks_for_budget(1000, 96);
    ASSERT_TRUE(num_blocks.is_ok());
    EXPECT_EQ(num_blocks.value(), 10);
    EXPECT_EQ(num_blocks_for_budget(150, 96).status().code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(num_blocks_for_budget(150, 0).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(num_blocks_for_budget(uint64_t(1) << 62, 1).value(), INT32_MAX);

    KvCacheConfig config{.block_size = 16, .num_blocks = num_blocks.value()};
    EXPECT_TRUE(config.validate().is_ok());
    EXPECT_EQ(KvManager(config).num_token_slots(), 9 * 16);
    EXPECT_FALSE((KvCacheConfig{.block_size = 0, .num_blocks = 10}).validate().is_ok());
    EXPECT_FALSE((KvCacheConfig{.block_size = 16, .num_blocks = 1}).validate().is_ok());
}

// Only blocks whose KV was written are ever found: a request planned for a step and freed before the step ran (a
// preemption by a more important arrival) leaves nothing in the prefix cache that a later request could hit.
TEST(KvManagerTest, BlocksAreCachedOnlyOnceComputed) {
    KvManager manager = make_manager(11);
    Tokens prompt = token_range(0, 10);
    ASSERT_EQ(manager.allocate_slots(0, prompt, 0, 10), std::optional<Ids>(Ids{1, 2, 3}));
    EXPECT_EQ(manager.pool().num_cached_blocks(), 0);
    EXPECT_TRUE(manager.get_computed_blocks(prompt).block_ids().empty()) << "allocated is not computed";
    manager.free(0);  // preempted before its step ran
    EXPECT_TRUE(manager.get_computed_blocks(prompt).block_ids().empty());

    ASSERT_EQ(manager.allocate_slots(1, prompt, 0, 6), std::optional<Ids>(Ids{4, 5}));  // 1-3 went to the tail
    manager.cache_computed_blocks(1, prompt, 6);  // a chunk of 6: one full block computed
    EXPECT_EQ(manager.get_computed_blocks(prompt).block_ids(), (Ids{4}));
    ASSERT_EQ(manager.allocate_slots(1, prompt, 6, 4), std::optional<Ids>(Ids{6}));
    EXPECT_EQ(manager.get_computed_blocks(prompt).block_ids(), (Ids{4})) << "the second chunk has not run";
    manager.cache_computed_blocks(1, prompt, 10);
    EXPECT_EQ(manager.get_computed_blocks(prompt).block_ids(), (Ids{4, 5}));
    EXPECT_TRUE(manager.verify().is_ok()) << manager.verify().message();
}

// Cached prefixes are shared only under the same cache salt, and each manager hashes with a seed of its own (drawn at
// random), so block hashes cannot be computed from outside the process.
TEST(KvManagerTest, CacheSaltsKeepPrefixesApartAndSeedsDiffer) {
    KvManager manager = make_manager(11);
    Tokens prompt = token_range(0, 10);
    ASSERT_TRUE(manager.allocate_slots(0, prompt, 0, 10, {}, "tenant-a").has_value());
    manager.cache_computed_blocks(0, prompt, 10);
    EXPECT_EQ(manager.get_computed_blocks(prompt, "tenant-a").num_tokens, 8);
    EXPECT_EQ(manager.get_computed_blocks(prompt, "tenant-b").num_tokens, 0);
    EXPECT_EQ(manager.get_computed_blocks(prompt).num_tokens, 0) << "no salt is a salt of its own";
    ComputedBlocks hit = manager.get_computed_blocks(prompt, "tenant-a");
    ASSERT_TRUE(manager.allocate_slots(1, prompt, 0, 2, hit, "tenant-a").has_value());
    EXPECT_EQ(table(manager, 1).front(), table(manager, 0).front()) << "the same salt shares";
    EXPECT_TRUE(manager.verify().is_ok()) << manager.verify().message();

    KvManager other = make_manager(11);
    ASSERT_TRUE(other.allocate_slots(0, prompt, 0, 10, {}, "tenant-a").has_value());
    other.cache_computed_blocks(0, prompt, 10);
    EXPECT_NE(other.pool().block_hash(1), manager.pool().block_hash(1)) << "each manager draws its own seed";
}

}  // namespace
}  // namespace tern::kv
