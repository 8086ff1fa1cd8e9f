// Per-request KV block tables on top of the BlockPool: allocation of slots for the tokens a step computes, prefix
// cache lookups and registration, and release. Block-id and token-count arithmetic only; the KV tensors that
// the ids index live elsewhere (kv storage) and scheduling decisions belong to the scheduler.
//
// KV groups (vLLM's hybrid allocator): a model whose layers attend differently keeps one block table per group of
// layers, all drawing on the one pool. A full-attention group keeps every block; a sliding-window group releases a
// block once it lies wholly before the window of every query still to come, and never allocates one that already
// does (a prefix hit or a resumed request), so a Gemma 3 request at 8k context holds its global layers' blocks for
// every position but its sliding layers' for the last window only. A model without windows has one full group.
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
    // One entry per KV group: 0 for full attention, or the sliding window in tokens (a query at position p reads
    // positions p - window + 1 .. p).
    std::vector<int> group_windows = {0};

    Status validate() const;
};

// How many blocks of `bytes_per_block` (K and V of every layer for block_size tokens, computed by the caller)
// fit in `budget_bytes`. Fails with kResourceExhausted when fewer than 2 fit (the null block plus one).
Result<int> num_blocks_for_budget(uint64_t budget_bytes, uint64_t bytes_per_block);

// How a model's layers share blocks (vLLM's KV cache groups): one group of every layer unless full-attention and
// sliding-window layers mix; then each kind is cut into groups of the smaller count's size (Gemma 3 1B: 4 full
// layers, 22 sliding ones in 6 groups of 4, the last with 2 slots unused), full groups first. A block holds
// layers_per_block layers of one group; group_windows has one entry per group (0: full, else `window`).
struct KvGroupLayout {
    int64_t layers_per_block = 0;
    std::vector<int> group_windows;
};
KvGroupLayout kv_group_layout(int64_t num_full_layers, int64_t num_sliding_layers, int window);

// The most blocks one request of `num_tokens` computed tokens holds at once over KV groups of `group_windows`, when
// a step computes at most `max_step_tokens` of its tokens: a full group holds every block, a sliding group the
// window before a step's first query, that step's tokens and a block each end may share.
int64_t max_blocks_held(std::span<const int> group_windows, int block_size, int64_t num_tokens,
                        int64_t max_step_tokens);

// A prefix hit from get_computed_blocks(): full cached blocks covering the first num_tokens tokens, one table per
// KV group (empty when there is no hit). A sliding group's table has kNullBlockId for the blocks before the window
// of the first query to compute.
struct ComputedBlocks {
    std::vector<std::vector<BlockId>> tables;
    int num_tokens = 0;  // each table's size * block_size

    // The first group's table (the only one of a model without windows); empty when there is no hit.
    const std::vector<BlockId>& block_ids() const;
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

    // Makes room for `num_new_tokens` more tokens of `request_id` and returns the newly allocated block ids, group
    // after group (empty when the last blocks had room), or nullopt when the pool is short, in which case nothing
    // changed (no block, no counter, no request entry). Running out is a normal outcome: the scheduler preempts or
    // waits. A sliding group first releases the blocks that lie wholly before the window of this step's first query.
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

    // The request's block table in `group` (append-only while it lives, but for a sliding group's entries that
    // become kNullBlockId); empty for an unknown id. Valid until the next call.
    std::span<const BlockId> block_ids(RequestId request_id, int group = 0) const;
    int num_groups() const { return static_cast<int>(group_windows_.size()); }
    int group_window(int group) const { return group_windows_[static_cast<size_t>(group)]; }
    // The most blocks a request of `num_tokens` computed tokens holds at once, over every group, when the scheduler
    // computes at most `max_step_tokens` of them per step (a sliding group holds its window and one step's tokens).
    int64_t max_blocks_held(int64_t num_tokens, int64_t max_step_tokens) const {
        return kv::max_blocks_held(group_windows_, block_size_, num_tokens, max_step_tokens);
    }
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
        BlockHash root = 0;                      // the parent hash of its first block (its cache salt's)
        std::vector<std::vector<BlockId>> tables;  // per group
        std::vector<BlockHash> block_hashes;     // of its first full blocks, extended as they fill
        std::vector<int> num_cached_blocks;      // per group: leading blocks already registered (or released)
    };
    void check_computed_blocks(BlockHash root, std::span<const TokenId> tokens, const ComputedBlocks& new_computed,
                               std::vector<BlockHash>& hashes) const;
    // The first block a sliding group still needs when the next query is at `first_query`; 0 for a full group.
    int first_kept_block(int group, int64_t first_query) const;
    // How many of a prefix hit of `num_blocks` blocks every sliding group holds (the window before it, cached).
    int sliding_groups_hit(std::span<const BlockHash> hashes, int num_blocks) const;
    // Releases the request's blocks that `first_query`'s windows have left; returns how many it would release
    // without releasing them when `dry_run`: those whose last holder it is.
    int release_out_of_window(RequestBlocks& request, int64_t first_query, bool dry_run);

    int block_size_;
    std::vector<int> group_windows_;
    uint64_t hash_seed_;
    BlockPool pool_;
    std::unordered_map<RequestId, RequestBlocks> requests_;
    PrefixCacheStats prefix_cache_stats_;
};

}  // namespace tern::kv
