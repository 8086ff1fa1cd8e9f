// Per-request KV block tables on top of the BlockPool: allocation of slots for the tokens a step computes, prefix
// cache lookups and registration, and release. Block-id and token-count arithmetic only; the KV tensors that
// the ids index live elsewhere (kv storage) and scheduling decisions belong to the scheduler.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace tern::kv {

using RequestId = int64_t;

struct KvCacheConfig {
    int block_size = kDefaultBlockSize;  // tokens per block, >= 1
    int num_blocks = 0;                  // including the null block, >= 2; see num_blocks_for_budget()
    bool enable_prefix_caching = true;   // off: no hashing, no lookups, freed blocks are plain free blocks
    uint64_t hash_seed = 0;              // of the block hashes (see prefix_root()); 0: drawn at random

    Status validate() const;
};

// How many blocks of `bytes_per_block` (K and V of every layer for block_size tokens, computed by the caller)
// fit in `budget_bytes`. Fails with kResourceExhausted when fewer than 2 fit (the null block plus one).
Result<int> num_blocks_for_budget(uint64_t budget_bytes, uint64_t bytes_per_block);

// A prefix hit from get_computed_blocks(): full cached blocks covering the first num_tokens tokens.
struct ComputedBlocks {
    std::vector<BlockId> block_ids;
    int num_tokens = 0;  // block_ids.size() * block_size
};

struct PrefixCacheStats {
    int64_t num_queries = 0;         // get_computed_blocks() calls while prefix caching is on
    int64_t num_queried_tokens = 0;  // their tokens
    int64_t num_hit_tokens = 0;      // tokens served from the cache

    double hit_rate() const { return num_queried_tokens == 0 ? 0.0 : double(num_hit_tokens) / num_queried_tokens; }
};

// Not thread-safe: owned and called by the engine thread only.
class KvManager {
public:
    explicit KvManager(const KvCacheConfig& config);  // `config` must validate (checked; validate user input first)

    // The longest prefix of `tokens` held by cached full blocks. Never the whole sequence: the last token is always
    // left to compute, because the step needs its logits. Does not reference the blocks: pass the result to
    // allocate_slots() for the same tokens before any other allocation, or it may be evicted (checked there).
    // Only blocks cached under the same `cache_salt` are found.
    ComputedBlocks get_computed_blocks(std::span<const TokenId> tokens, std::string_view cache_salt = {});

    // Makes room for `num_new_tokens` more tokens of `request_id` and returns the newly allocated block ids (empty
    // when the last block had room), or nullopt when the pool is short, in which case nothing changed (no block,
    // no counter, no request entry). Running out is a normal outcome: the scheduler preempts or waits.
    //
    //   tokens:  | computed | new computed (prefix hit) | new             | not yet scheduled ...
    //            0          num_computed_tokens          +new_computed      +num_new_tokens
    //
    // `tokens` holds all known tokens of the request (prompt, then outputs) and must cover every slot requested;
    // `num_computed_tokens` must already have slots. A prefix hit is only accepted on a request's first allocation
    // (also after free(), e.g. when resuming a preempted request). New blocks are not cached here: see
    // cache_computed_blocks().
    // `cache_salt` counts on a request's first allocation: its blocks are cached under that salt.
    std::optional<std::vector<BlockId>> allocate_slots(RequestId request_id, std::span<const TokenId> tokens,
                                                       int num_computed_tokens, int num_new_tokens,
                                                       const ComputedBlocks& new_computed = {},
                                                       std::string_view cache_salt = {});

    // Registers the request's full blocks among its first `num_computed_tokens` tokens with the prefix cache, once
    // their KV has been written (the step that computes them has run).
    // NOTE(kv): vLLM caches a block when its slots are allocated, so that a request admitted in the same step can hit
    // it. Here a block is hashed only once computed: a request planned and then preempted in the same schedule(), or
    // a failed forward, would otherwise leave hashes on blocks that were never written, and a later hit (or one taken
    // earlier in that step) would read garbage. The cost is that two prompts admitted in the same step do not share.
    void cache_computed_blocks(RequestId request_id, std::span<const TokenId> tokens, int num_computed_tokens);

    // Releases the request's blocks, tail first, so the tail blocks (least likely to be shared) are evicted before
    // the prefix. Unknown ids are ignored (finish and abort may both free).
    void free(RequestId request_id);

    // The request's block table (append-only while it lives); empty for an unknown id. Valid until the next call.
    std::span<const BlockId> block_ids(RequestId request_id) const;
    bool has_request(RequestId request_id) const { return requests_.contains(request_id); }
    int num_requests() const { return static_cast<int>(requests_.size()); }

    int block_size() const { return block_size_; }
    int num_free_blocks() const { return pool_.num_free_blocks(); }
    int64_t num_token_slots() const { return int64_t(pool_.num_usable_blocks()) * block_size_; }
    double usage() const { return pool_.usage(); }
    const PrefixCacheStats& prefix_cache_stats() const { return prefix_cache_stats_; }
    const BlockPool& pool() const { return pool_; }
    bool reset_prefix_cache() { return pool_.reset_prefix_cache(); }

    // The pool's invariants plus: each block's reference count equals the number of block tables holding it, and
    // no table holds a block twice or the null block. O(blocks + table entries); for tests and debug builds.
    Status verify() const;

private:
    struct RequestBlocks {
        BlockHash root = 0;                   // the parent hash of its first block (its cache salt's)
        std::vector<BlockId> block_ids;
        std::vector<BlockHash> block_hashes;  // of its first full blocks, extended as they fill
        int num_cached_blocks = 0;            // leading blocks already registered with the pool
    };
    void check_computed_blocks(BlockHash root, std::span<const TokenId> tokens, const ComputedBlocks& new_computed,
                               std::vector<BlockHash>& hashes) const;

    int block_size_;
    uint64_t hash_seed_;
    BlockPool pool_;
    std::unordered_map<RequestId, RequestBlocks> requests_;
    PrefixCacheStats prefix_cache_stats_;
};

}  // namespace tern::kv
