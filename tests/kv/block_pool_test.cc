// BlockPool, FreeBlockQueue and the block hash chain: exact block ids, eviction order, reference counts.
#include <gtest/gtest.h>

#include <vector>

#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace tern::kv {
namespace {

using Ids = std::vector<BlockId>;

TEST(FreeBlockQueueTest, KeepsOrderAndRemovesFromTheMiddle) {
    FreeBlockQueue queue(6);
    for (BlockId id : {3, 1, 4, 5}) queue.push_back(id);
    queue.remove(1);
    EXPECT_EQ(queue.to_vector(), (Ids{3, 4, 5}));
    EXPECT_EQ(queue.pop_front(), 3);
    queue.push_back(1);
    EXPECT_EQ(queue.to_vector(), (Ids{4, 5, 1}));
    EXPECT_EQ(queue.size(), 3);
    EXPECT_TRUE(queue.contains(5));
    EXPECT_FALSE(queue.contains(3));
}

TEST(BlockPoolTest, AllocatesFromTheHeadAndFreesToTheTail) {
    BlockPool pool(11, /*enable_prefix_caching=*/true);
    EXPECT_EQ(pool.num_usable_blocks(), 10);
    EXPECT_EQ(pool.num_free_blocks(), 10);
    EXPECT_EQ(pool.free_queue(), (Ids{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));  // the null block 0 is never free

    std::optional<Ids> first = pool.allocate(3);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(*first, (Ids{1, 2, 3}));
    EXPECT_EQ(pool.ref_count(2), 1);
    EXPECT_DOUBLE_EQ(pool.usage(), 0.3);

    pool.free(Ids{3, 2, 1});  // in the order given: 3 is evicted first
    EXPECT_EQ(pool.free_queue(), (Ids{4, 5, 6, 7, 8, 9, 10, 3, 2, 1}));
    std::optional<Ids> second = pool.allocate(8);
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(*second, (Ids{3, 4, 5, 6, 7, 8, 9, 10}));  // the head's 8, in ascending order
    EXPECT_EQ(pool.free_queue(), (Ids{2, 1}));
    EXPECT_EQ(pool.stats().num_allocated_blocks, 11);
    EXPECT_TRUE(pool.verify().is_ok()) << pool.verify().message();
}

// The queue chooses which blocks go (LRU); the pool hands them out in ascending order, so that a prompt whose blocks
// were freed in reverse by the request before it still gets them in the order the KV cache stores them.
TEST(BlockPoolTest, HandsOutTheHeadsBlocksInAscendingOrder) {
    BlockPool pool(9, true);
    ASSERT_EQ(pool.allocate(4), (std::optional<Ids>(Ids{1, 2, 3, 4})));
    pool.free(Ids{4, 3, 2, 1});
    EXPECT_EQ(pool.free_queue(), (Ids{5, 6, 7, 8, 4, 3, 2, 1}));
    EXPECT_EQ(pool.allocate(6), (std::optional<Ids>(Ids{3, 4, 5, 6, 7, 8})));
    EXPECT_EQ(pool.free_queue(), (Ids{2, 1}));
    EXPECT_TRUE(pool.verify().is_ok()) << pool.verify().message();
}

TEST(BlockPoolTest, AllocationFailureChangesNothing) {
    BlockPool pool(5, true);
    ASSERT_TRUE(pool.allocate(3).has_value());
    Ids queue_before = pool.free_queue();
    EXPECT_FALSE(pool.allocate(2).has_value());
    EXPECT_EQ(pool.free_queue(), queue_before);
    EXPECT_EQ(pool.stats().num_allocated_blocks, 3);
    EXPECT_EQ(pool.allocate(1), (std::optional<Ids>(Ids{4})));
}

TEST(BlockPoolTest, SharedBlocksReturnToTheQueueWithTheLastReference) {
    BlockPool pool(6, true);
    Ids blocks = *pool.allocate(2);
    pool.touch(blocks);
    EXPECT_EQ(pool.ref_count(1), 2);
    pool.free(blocks);
    EXPECT_EQ(pool.ref_count(1), 1);
    EXPECT_EQ(pool.num_free_blocks(), 3);
    pool.free(Ids{2, 1});
    EXPECT_EQ(pool.free_queue(), (Ids{3, 4, 5, 2, 1}));
    EXPECT_TRUE(pool.verify().is_ok()) << pool.verify().message();
}

TEST(BlockPoolTest, CachedFreeBlocksAreHitUntilEvicted) {
    BlockPool pool(4, true);
    Ids blocks = *pool.allocate(2);
    EXPECT_TRUE(pool.cache_block(1, 111));
    EXPECT_TRUE(pool.cache_block(2, 222));
    pool.free(Ids{2, 1});
    EXPECT_EQ(pool.free_queue(), (Ids{3, 2, 1}));
    EXPECT_EQ(pool.num_cached_blocks(), 2);

    // A prefix hit on a cached free block takes it out of the middle of the queue.
    EXPECT_EQ(pool.lookup(111), std::optional<BlockId>(1));
    pool.touch(Ids{1});
    EXPECT_EQ(pool.free_queue(), (Ids{3, 2}));

    // Allocation takes 3 (never cached), then 2, evicting its hash; block 1 stays cached.
    EXPECT_EQ(*pool.allocate(2), (Ids{2, 3}));
    EXPECT_EQ(pool.lookup(222), std::nullopt);
    EXPECT_EQ(pool.block_hash(2), std::nullopt);
    EXPECT_EQ(pool.lookup(111), std::optional<BlockId>(1));
    EXPECT_EQ(pool.stats().num_evicted_blocks, 1);
    EXPECT_TRUE(pool.verify().is_ok()) << pool.verify().message();
}

TEST(BlockPoolTest, DuplicateContentIsNotCachedTwice) {
    BlockPool pool(4, true);
    Ids blocks = *pool.allocate(2);
    EXPECT_TRUE(pool.cache_block(1, 7));
    EXPECT_FALSE(pool.cache_block(2, 7));
    EXPECT_EQ(pool.lookup(7), std::optional<BlockId>(1));
    EXPECT_EQ(pool.block_hash(2), std::nullopt);
    EXPECT_TRUE(pool.verify().is_ok()) << pool.verify().message();
}

TEST(BlockPoolTest, DisabledPrefixCachingCachesNothing) {
    BlockPool pool(4, /*enable_prefix_caching=*/false);
    pool.allocate(1);
    EXPECT_FALSE(pool.cache_block(1, 7));
    EXPECT_EQ(pool.lookup(7), std::nullopt);
    EXPECT_EQ(pool.num_cached_blocks(), 0);
}

TEST(BlockPoolTest, ResetPrefixCacheOnlyWhenIdle) {
    BlockPool pool(4, true);
    pool.allocate(1);
    pool.cache_block(1, 7);
    EXPECT_FALSE(pool.reset_prefix_cache());
    pool.free(Ids{1});
    EXPECT_TRUE(pool.reset_prefix_cache());
    EXPECT_EQ(pool.lookup(7), std::nullopt);
    EXPECT_TRUE(pool.verify().is_ok()) << pool.verify().message();
}

TEST(BlockPoolDeathTest, DoubleFreeFailsTheCheck) {
    BlockPool pool(4, true);
    Ids blocks = *pool.allocate(1);
    pool.free(blocks);
    EXPECT_DEATH(pool.free(blocks), "double free of block 1");
}

TEST(BlockPoolDeathTest, TouchingAnOutOfRangeBlockFailsTheCheck) {
    BlockPool pool(4, true);
    EXPECT_DEATH(pool.touch(Ids{4}), "out of range");
}

TEST(BlockHashTest, ChainsThroughTheParent) {
    std::vector<TokenId> tokens = {1, 2, 3, 4};
    const BlockHash seed_root = prefix_root(7, "");
    BlockHash root = hash_block_tokens(seed_root, tokens);
    EXPECT_EQ(root, hash_block_tokens(seed_root, std::vector<TokenId>{1, 2, 3, 4}));
    EXPECT_NE(root, hash_block_tokens(seed_root, std::vector<TokenId>{1, 2, 4, 3}));
    // The same tokens after a different prefix hash differently.
    EXPECT_NE(hash_block_tokens(root, tokens), hash_block_tokens(root + 1, tokens));
    EXPECT_NE(hash_block_tokens(root, tokens), root);
}

TEST(BlockHashTest, ExtendKeepsExistingHashesAndOnlyHashesFullBlocks) {
    std::vector<TokenId> a = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    std::vector<TokenId> b = {9, 9, 9, 9, 5, 6, 7, 8};
    const BlockHash root = prefix_root(7, "");
    std::vector<BlockHash> hashes_a;
    extend_block_hashes(root, a, 4, 1, hashes_a);
    extend_block_hashes(root, a, 4, 2, hashes_a);
    ASSERT_EQ(hashes_a.size(), 2u);
    EXPECT_EQ(hashes_a[0], hash_block_tokens(root, std::span(a).first(4)));
    EXPECT_EQ(hashes_a[1], hash_block_tokens(hashes_a[0], std::span(a).subspan(4, 4)));
    std::vector<BlockHash> hashes_b;
    extend_block_hashes(root, b, 4, 2, hashes_b);
    EXPECT_NE(hashes_a[1], hashes_b[1]);  // same second block, different first block
    EXPECT_DEATH(extend_block_hashes(root, a, 4, 3, hashes_a), "need more than 9 tokens");
    EXPECT_NE(prefix_root(7, ""), prefix_root(8, "")) << "the seed changes every hash";
    EXPECT_NE(prefix_root(7, ""), prefix_root(7, "tenant-a")) << "so does the salt";
}

}  // namespace
}  // namespace tern::kv
