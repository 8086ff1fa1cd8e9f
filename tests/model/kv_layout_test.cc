// The paged KV cache's storage layout (model/kv_cache.h): every (layer, K/V, head, block, position) slice owns its
// own bytes, the slices tile the storage exactly, a head's positions in consecutive blocks of one run follow each
// other in memory, and copy_block copies a block whole, whichever runs the two blocks are in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "model/kv_cache.h"

namespace tern {
namespace {

constexpr int64_t kBlockSize = 16;
constexpr int64_t kNumBlocks = 2 * KvCache::kBlocksPerRun + 5;  // two full runs and a shorter last one

HParams small_hparams() {
    HParams hparams;
    hparams.num_layers = 2;
    hparams.num_heads = 4;
    hparams.num_kv_heads = 2;
    hparams.head_dim = 32;
    return hparams;
}

std::unique_ptr<KvCache> make_cache(KvType type) {
    return KvCache::create_paged(small_hparams(), kNumBlocks, kBlockSize, type).value();
}

// Calls fn(layer, head, block, row, which) for every slice of the cache.
template <typename Fn>
void for_each_slice(const HParams& hparams, Fn fn) {
    for (int64_t layer = 0; layer < hparams.num_layers; ++layer) {
        for (int64_t head = 0; head < hparams.num_kv_heads; ++head) {
            for (int64_t block = 0; block < kNumBlocks; ++block) {
                for (int64_t row = 0; row < kBlockSize; ++row) {
                    for (int which = 0; which < 2; ++which) fn(layer, head, block, row, which);
                }
            }
        }
    }
}

uint8_t* slice(KvCache& cache, int64_t layer, int64_t head, int64_t block, int64_t row, int which) {
    return which == 0 ? cache.key_slice(layer, block, head, row) : cache.value_slice(layer, block, head, row);
}

TEST(KvLayout, SlicesTileTheStorageExactly) {
    for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
        SCOPED_TRACE(std::string(kv_type_name(type)));
        std::unique_ptr<KvCache> cache = make_cache(type);
        const uint8_t* base = cache->key_slice(0, 0, 0, 0);
        std::vector<int64_t> offsets;
        for_each_slice(small_hparams(), [&](int64_t layer, int64_t head, int64_t block, int64_t row, int which) {
            offsets.push_back(slice(*cache, layer, head, block, row, which) - base);
        });
        std::sort(offsets.begin(), offsets.end());
        ASSERT_EQ(static_cast<int64_t>(offsets.size()) * cache->slice_bytes(), cache->num_bytes());
        for (size_t idx = 0; idx < offsets.size(); ++idx) {
            ASSERT_EQ(offsets[idx], static_cast<int64_t>(idx) * cache->slice_bytes()) << "slice " << idx;
        }
    }
}

TEST(KvLayout, ConsecutiveBlocksOfARunFollowEachOtherPerHead) {
    std::unique_ptr<KvCache> cache = make_cache(KvType::kF16);
    const int64_t block_run = kBlockSize * cache->slice_bytes();
    int contiguous = 0;
    for (int64_t block = 0; block + 1 < kNumBlocks; ++block) {
        const bool same_run = (block + 1) % KvCache::kBlocksPerRun != 0;
        for (int64_t layer = 0; layer < 2; ++layer) {
            for (int64_t head = 0; head < 2; ++head) {
                const bool follows =
                    cache->key_slice(layer, block + 1, head, 0) == cache->key_slice(layer, block, head, 0) + block_run &&
                    cache->value_slice(layer, block + 1, head, 0) == cache->value_slice(layer, block, head, 0) + block_run;
                EXPECT_EQ(follows, same_run) << "block " << block << " layer " << layer << " head " << head;
                contiguous += follows ? 1 : 0;
            }
        }
    }
    EXPECT_EQ(contiguous, 4 * (kNumBlocks - 1 - 2));  // every pair but the two across run boundaries
}

TEST(KvLayout, CopyBlockCopiesEverySliceAcrossRuns) {
    std::unique_ptr<KvCache> cache = make_cache(KvType::kF32);
    const HParams hparams = small_hparams();
    // Each slice starts filled with a byte of its own, so a slice written twice or not at all shows.
    auto fill_value = [](int64_t layer, int64_t head, int64_t block, int64_t row, int which) {
        return static_cast<uint8_t>((((layer * 3 + head) * 41 + block) * 17 + row) * 2 + which);
    };
    for_each_slice(hparams, [&](int64_t layer, int64_t head, int64_t block, int64_t row, int which) {
        std::memset(slice(*cache, layer, head, block, row, which), fill_value(layer, head, block, row, which),
                    static_cast<size_t>(cache->slice_bytes()));
    });
    const int64_t last = kNumBlocks - 1, middle = KvCache::kBlocksPerRun + 4;
    cache->copy_block(3, last - 1);  // from the first run to the short last one
    cache->copy_block(last, middle);  // and from the last run into the middle one
    for_each_slice(hparams, [&](int64_t layer, int64_t head, int64_t block, int64_t row, int which) {
        const int64_t source = block == last - 1 ? 3 : block == middle ? last : block;
        const uint8_t expected = fill_value(layer, head, source, row, which);
        const uint8_t* bytes = slice(*cache, layer, head, block, row, which);
        for (int64_t idx = 0; idx < cache->slice_bytes(); ++idx) {
            ASSERT_EQ(bytes[idx], expected) << "layer " << layer << " head " << head << " block " << block
                                            << " row " << row << (which == 0 ? " K" : " V");
        }
    });
}

}  // namespace
}  // namespace tern
