// The KV block pool: fixed-size blocks with reference counts, a free queue in eviction (LRU) order, the prefix
// cache's hash -> block map, and a null placeholder block. Pure bookkeeping on block ids; no tensors, no requests.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/block_hash.h"
#include "kv/free_block_queue.h"

namespace tern::kv {

inline constexpr int kDefaultBlockSize = 16;  // tokens per block
// Block 0 is a placeholder that is never allocated (vLLM's null_block): a block table can point at it for
// positions that hold no KV (e.g. outside a sliding window). Its reference count is not maintained.
inline constexpr BlockId kNullBlockId = 0;

struct BlockPoolStats {
    int64_t num_allocated_blocks = 0;  // blocks handed out by allocate(), over the pool's life
    int64_t num_evicted_blocks = 0;    // cached blocks whose hash was dropped so the block could be reused
};

// Life of a block:
//
//   free (ref 0, in queue) --allocate--> in use (ref >= 1) --free to ref 0--> free, at the queue's tail
//   cached free block (ref 0, has hash) --touch (prefix hit)--> in use again, hash kept
//   cached free block --reaches the head and is allocated--> hash entry dropped (eviction)
//
// NOTE(kv): as in vLLM, a block whose contents are already cached under another block is not de-duplicated
// (cache_block() returns false and it stays unhashed): swapping it would change block ids, and block tables are
// append-only.
//
// Not thread-safe: owned and called by the engine thread only.
class BlockPool {
public:
    // `num_blocks` counts the null block, so num_blocks - 1 are usable; it must be >= 2 (checked).
    BlockPool(int num_blocks, bool enable_prefix_caching);

    int num_blocks() const { return static_cast<int>(blocks_.size()); }
    int num_usable_blocks() const { return num_blocks() - 1; }
    // Free blocks include cached blocks no request references (they are evicted on demand).
    int num_free_blocks() const { return free_queue_.size(); }
    int num_cached_blocks() const { return static_cast<int>(hash_to_block_.size()); }
    bool prefix_caching_enabled() const { return enable_prefix_caching_; }
    // Fraction of the usable blocks referenced by some request, in [0, 1].
    double usage() const;

    // Takes `count` blocks from the head of the free queue with reference count 1, evicting their cached hashes,
    // and returns them in ascending id order. Returns nullopt, and changes nothing, when fewer than `count` blocks are free.
    std::optional<std::vector<BlockId>> allocate(int count);
    // Adds a reference to each block (a prefix hit); a free block leaves the free queue. Skips the null block.
    void touch(std::span<const BlockId> block_ids);
    // Drops a reference from each block in the given order; a block reaching 0 goes to the free queue's tail, so
    // the first block given is evicted first. Freeing an unreferenced block fails a TERN_CHECK. Skips the null block.
    void free(std::span<const BlockId> block_ids);

    // The cached block holding the tokens behind `hash`, if any. Does not touch it.
    std::optional<BlockId> lookup(BlockHash hash) const;
    // Registers a full, referenced, not yet hashed block under `hash` (checked). Returns false when prefix caching
    // is off or another block already holds `hash`.
    bool cache_block(BlockId block_id, BlockHash hash);
    // Drops every cached hash. Only possible when no block is referenced (returns false otherwise), e.g. between
    // benchmark runs.
    bool reset_prefix_cache();

    int ref_count(BlockId block_id) const;
    std::optional<BlockHash> block_hash(BlockId block_id) const;
    std::vector<BlockId> free_queue() const { return free_queue_.to_vector(); }  // head (evicted next) first
    const BlockPoolStats& stats() const { return stats_; }

    // Checks every invariant (queue links, queue membership <=> reference count 0, the hash map <=> block hashes)
    // in O(num_blocks). For tests and debug builds; returns kInternal naming the first violation.
    Status verify() const;

private:
    struct Block {
        int ref_count = 0;
        std::optional<BlockHash> hash;  // set while the block is in hash_to_block_
    };
    void check_id(BlockId block_id) const;
    Status verify_queue() const;

    std::vector<Block> blocks_;
    FreeBlockQueue free_queue_;
    std::unordered_map<BlockHash, BlockId> hash_to_block_;
    bool enable_prefix_caching_;
    BlockPoolStats stats_;
};

}  // namespace tern::kv
