#include "kv/kv_manager.h"

#include <algorithm>
#include <climits>
#include <random>
#include <string>

#include "base/check.h"

namespace tern::kv {

Status KvCacheConfig::validate() const {
    if (block_size < 1) return invalid_argument("KV block size must be >= 1 token, got " + std::to_string(block_size));
    if (num_blocks < 2) {
        return invalid_argument("the KV cache needs at least 2 blocks (a placeholder and one usable), got " +
                                std::to_string(num_blocks) + "; raise the KV memory budget");
    }
    if (group_windows.empty() || std::ranges::any_of(group_windows, [](int window) { return window < 0; })) {
        return invalid_argument("the KV cache needs at least one group, and windows of 0 (full) or more tokens");
    }
    return Status::ok();
}

Result<int> num_blocks_for_budget(uint64_t budget_bytes, uint64_t bytes_per_block) {
    if (bytes_per_block == 0) return invalid_argument("bytes per KV block must be > 0");
    uint64_t num_blocks = budget_bytes / bytes_per_block;
    if (num_blocks < 2) {
        return Status(StatusCode::kResourceExhausted,
                      "a KV budget of " + std::to_string(budget_bytes) + " bytes holds " + std::to_string(num_blocks) +
                          " blocks of " + std::to_string(bytes_per_block) +
                          " bytes; at least 2 are needed: raise the KV memory budget");
    }
    return static_cast<int>(std::min<uint64_t>(num_blocks, INT_MAX));
}

KvGroupLayout kv_group_layout(int64_t num_full_layers, int64_t num_sliding_layers, int window) {
    KvGroupLayout layout;
    if (num_full_layers == 0 || num_sliding_layers == 0) {
        layout.layers_per_block = num_full_layers + num_sliding_layers;
        layout.group_windows = {num_sliding_layers > 0 ? window : 0};
        return layout;
    }
    layout.layers_per_block = std::min(num_full_layers, num_sliding_layers);
    const auto groups = [&](int64_t layers) {
        return static_cast<size_t>((layers + layout.layers_per_block - 1) / layout.layers_per_block);
    };
    layout.group_windows.assign(groups(num_full_layers), 0);
    layout.group_windows.insert(layout.group_windows.end(), groups(num_sliding_layers), window);
    return layout;
}

int64_t max_blocks_held(std::span<const int> group_windows, int block_size, int64_t num_tokens,
                        int64_t max_step_tokens) {
    const int64_t all = (num_tokens + block_size - 1) / block_size;
    int64_t total = 0;
    for (int window : group_windows) {
        total += window == 0 ? all : std::min(all, (window - 1 + max_step_tokens + block_size - 1) / block_size + 1);
    }
    return total;
}

namespace {

uint64_t random_seed() {
    std::random_device device;
    return (uint64_t{device()} << 32) | device() | 1;  // | 1: never the "draw one" 0
}

const KvCacheConfig& checked(const KvCacheConfig& config) {
    Status status = config.validate();
    TERN_CHECK(status.is_ok()) << status.message();
    return config;
}

}  // namespace

const std::vector<BlockId>& ComputedBlocks::block_ids() const {
    static const std::vector<BlockId> kNone;
    return tables.empty() ? kNone : tables.front();
}

namespace {

// The pool's key for block `hash` in `group`: group 0 keeps the chain's hash, so a model without windows caches
// exactly as before; other groups' keys are the hash moved by a per-group odd constant (a collision between groups
// is as likely as one within a group).
BlockHash group_hash(BlockHash hash, int group) {
    return group == 0 ? hash : hash ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(2 * group + 1));
}

}  // namespace

KvManager::KvManager(const KvCacheConfig& config)
    : block_size_(checked(config).block_size),
      group_windows_(config.group_windows),
      hash_seed_(config.hash_seed != 0 ? config.hash_seed : random_seed()),
      pool_(config.num_blocks, config.enable_prefix_caching) {}

int KvManager::first_kept_block(int group, int64_t first_query) const {
    const int window = group_window(group);
    if (window == 0) return 0;
    return static_cast<int>(std::max<int64_t>(0, first_query - window + 1) / block_size_);
}

int KvManager::sliding_groups_hit(std::span<const BlockHash> hashes, int num_blocks) const {
    for (; num_blocks > 0; --num_blocks) {
        bool held = true;
        for (int group = 0; group < num_groups() && held; ++group) {
            if (group_window(group) == 0) continue;
            const int first = first_kept_block(group, int64_t{num_blocks} * block_size_);
            for (int block_idx = first; block_idx < num_blocks && held; ++block_idx) {
                held = pool_.lookup(group_hash(hashes[static_cast<size_t>(block_idx)], group)).has_value();
            }
        }
        if (held) return num_blocks;
    }
    return 0;
}

ComputedBlocks KvManager::get_computed_blocks(std::span<const TokenId> tokens, std::string_view cache_salt) {
    ComputedBlocks hit;
    if (!pool_.prefix_caching_enabled() || tokens.empty()) return hit;
    // Full blocks among the first size - 1 tokens only: the last token must be computed to get its logits.
    const int max_blocks = static_cast<int>((tokens.size() - 1) / block_size_);
    std::vector<BlockHash> hashes;
    extend_block_hashes(prefix_root(hash_seed_, cache_salt), tokens, block_size_, max_blocks, hashes);
    // The full groups' longest run of cached blocks, then the longest prefix of it whose windows are cached too.
    int num_blocks = 0;
    for (; num_blocks < max_blocks; ++num_blocks) {
        bool held = true;
        for (int group = 0; group < num_groups() && held; ++group) {
            if (group_window(group) != 0) continue;
            held = pool_.lookup(group_hash(hashes[static_cast<size_t>(num_blocks)], group)).has_value();
        }
        if (!held) break;
    }
    num_blocks = sliding_groups_hit(hashes, num_blocks);
    hit.num_tokens = num_blocks * block_size_;
    if (num_blocks > 0) {
        for (int group = 0; group < num_groups(); ++group) {
            std::vector<BlockId>& table = hit.tables.emplace_back(static_cast<size_t>(num_blocks), kNullBlockId);
            for (int block_idx = first_kept_block(group, hit.num_tokens); block_idx < num_blocks; ++block_idx) {
                table[static_cast<size_t>(block_idx)] = *pool_.lookup(group_hash(hashes[block_idx], group));
            }
        }
    }
    ++prefix_cache_stats_.num_queries;
    prefix_cache_stats_.num_queried_tokens += static_cast<int64_t>(tokens.size());
    prefix_cache_stats_.num_hit_tokens += hit.num_tokens;
    return hit;
}

void KvManager::check_computed_blocks(BlockHash root, std::span<const TokenId> tokens,
                                      const ComputedBlocks& new_computed, std::vector<BlockHash>& hashes) const {
    if (new_computed.tables.empty()) {
        TERN_CHECK(new_computed.num_tokens == 0)
            << "a prefix hit of " << new_computed.num_tokens << " tokens has no blocks";
        return;
    }
    TERN_CHECK(static_cast<int>(new_computed.tables.size()) == num_groups())
        << "a prefix hit has " << new_computed.tables.size() << " tables for " << num_groups() << " KV groups";
    const int num_blocks = static_cast<int>(new_computed.tables.front().size());
    TERN_CHECK(new_computed.num_tokens == num_blocks * block_size_)
        << "a prefix hit of " << num_blocks << " blocks claims " << new_computed.num_tokens << " tokens";
    extend_block_hashes(root, tokens, block_size_, num_blocks, hashes);
    for (int group = 0; group < num_groups(); ++group) {
        const std::vector<BlockId>& table = new_computed.tables[static_cast<size_t>(group)];
        TERN_CHECK(static_cast<int>(table.size()) == num_blocks) << "a prefix hit's tables differ in length";
        for (int block_idx = 0; block_idx < num_blocks; ++block_idx) {
            const BlockId block_id = table[static_cast<size_t>(block_idx)];
            const bool needed = block_idx >= first_kept_block(group, new_computed.num_tokens);
            TERN_CHECK(needed == (block_id != kNullBlockId))
                << "a prefix hit holds the wrong blocks of group " << group;
            TERN_CHECK(!needed || pool_.block_hash(block_id) == group_hash(hashes[block_idx], group))
                << "stale prefix hit: block " << block_id << " was evicted or reused after get_computed_blocks()";
        }
    }
}

int KvManager::release_out_of_window(RequestBlocks& request, int64_t first_query, bool dry_run) {
    int num_released = 0;
    for (int group = 0; group < num_groups(); ++group) {
        std::vector<BlockId>& table = request.tables[static_cast<size_t>(group)];
        const int end = std::min(first_kept_block(group, first_query), static_cast<int>(table.size()));
        for (int block_idx = 0; block_idx < end; ++block_idx) {
            BlockId& block_id = table[static_cast<size_t>(block_idx)];
            if (block_id == kNullBlockId) continue;
            if (pool_.ref_count(block_id) == 1) ++num_released;
            if (dry_run) continue;
            // The oldest first: a freed block goes to the free queue's tail, so the oldest is evicted first.
            pool_.free(std::span<const BlockId>(&block_id, 1));
            block_id = kNullBlockId;
        }
    }
    return num_released;
}

std::optional<std::vector<BlockId>> KvManager::allocate_slots(RequestId request_id, std::span<const TokenId> tokens,
                                                              int num_computed_tokens, int num_new_tokens,
                                                              const ComputedBlocks& new_computed,
                                                              std::string_view cache_salt) {
    auto it = requests_.find(request_id);
    const int num_existing_blocks = it == requests_.end() ? 0 : static_cast<int>(it->second.tables.front().size());
    TERN_CHECK(num_computed_tokens >= 0 && num_new_tokens >= 0)
        << "negative token counts " << num_computed_tokens << ", " << num_new_tokens;
    TERN_CHECK(num_computed_tokens <= num_existing_blocks * block_size_)
        << num_computed_tokens << " computed tokens but only " << num_existing_blocks << " blocks";
    TERN_CHECK(new_computed.tables.empty() || num_existing_blocks == 0)
        << "a prefix hit is only accepted on a request's first allocation";
    const int64_t first_query = int64_t(num_computed_tokens) + new_computed.num_tokens;
    const int64_t num_total_tokens = first_query + num_new_tokens;
    TERN_CHECK(num_total_tokens <= static_cast<int64_t>(tokens.size()))
        << "slots for " << num_total_tokens << " tokens requested but only " << tokens.size() << " are known";
    const BlockHash root = it == requests_.end() ? prefix_root(hash_seed_, cache_salt) : it->second.root;
    std::vector<BlockHash> computed_hashes;
    check_computed_blocks(root, tokens, new_computed, computed_hashes);

    // New blocks per group: those past the table's end that this step's windows reach.
    const int num_hit_blocks = new_computed.num_tokens / block_size_;
    const int num_known_blocks = std::max(num_existing_blocks, num_hit_blocks);
    const int num_required_blocks = static_cast<int>((num_total_tokens + block_size_ - 1) / block_size_);
    int num_new_blocks = 0;
    for (int group = 0; group < num_groups(); ++group) {
        const int first = std::max(num_known_blocks, first_kept_block(group, first_query));
        num_new_blocks += std::max(0, num_required_blocks - first);
    }
    // Hit blocks nobody references sit in the free queue; touching them takes them out of it.
    int num_free_hit_blocks = 0;
    for (const std::vector<BlockId>& table : new_computed.tables) {
        num_free_hit_blocks += static_cast<int>(std::count_if(table.begin(), table.end(), [&](BlockId id) {
            return id != kNullBlockId && pool_.ref_count(id) == 0;
        }));
    }
    const int num_released = it == requests_.end() ? 0 : release_out_of_window(it->second, first_query, true);
    if (num_new_blocks > pool_.num_free_blocks() - num_free_hit_blocks + num_released) return std::nullopt;

    // Touch before allocating, or the allocation could take (and evict) a hit block from the free queue.
    for (const std::vector<BlockId>& table : new_computed.tables) pool_.touch(table);
    RequestBlocks& request = requests_[request_id];
    if (request.tables.empty()) {
        request.tables.resize(static_cast<size_t>(num_groups()));
        request.num_cached_blocks.assign(static_cast<size_t>(num_groups()), 0);
    }
    release_out_of_window(request, first_query, false);
    std::optional<std::vector<BlockId>> new_block_ids = pool_.allocate(num_new_blocks);
    TERN_CHECK(new_block_ids.has_value()) << "allocation failed after the capacity check";

    request.root = root;
    if (num_hit_blocks > 0) {
        request.tables = new_computed.tables;
        request.block_hashes = std::move(computed_hashes);
        request.num_cached_blocks.assign(static_cast<size_t>(num_groups()), num_hit_blocks);
    }
    auto next_block = new_block_ids->begin();
    for (int group = 0; group < num_groups(); ++group) {
        std::vector<BlockId>& table = request.tables[static_cast<size_t>(group)];
        const int first = first_kept_block(group, first_query);
        while (static_cast<int>(table.size()) < num_required_blocks) {
            table.push_back(static_cast<int>(table.size()) >= first ? *next_block++ : kNullBlockId);
        }
    }
    return new_block_ids;
}

void KvManager::cache_computed_blocks(RequestId request_id, std::span<const TokenId> tokens, int num_computed_tokens) {
    auto it = requests_.find(request_id);
    TERN_CHECK(it != requests_.end()) << "caching blocks of request " << request_id << ", which holds none";
    RequestBlocks& request = it->second;
    const int num_blocks = static_cast<int>(request.tables.front().size());
    TERN_CHECK(num_computed_tokens >= 0 && num_computed_tokens <= static_cast<int>(tokens.size()) &&
               num_computed_tokens <= num_blocks * block_size_)
        << "request " << request_id << ": " << num_computed_tokens << " computed tokens of " << tokens.size()
        << " known, " << num_blocks << " blocks";
    const int num_full_blocks = num_computed_tokens / block_size_;
    if (!pool_.prefix_caching_enabled()) return;
    extend_block_hashes(request.root, tokens, block_size_, num_full_blocks, request.block_hashes);
    for (int group = 0; group < num_groups(); ++group) {
        int& num_cached = request.num_cached_blocks[static_cast<size_t>(group)];
        for (int block_idx = num_cached; block_idx < num_full_blocks; ++block_idx) {
            const BlockId block_id = request.tables[static_cast<size_t>(group)][static_cast<size_t>(block_idx)];
            if (block_id == kNullBlockId) continue;  // released already (a sliding group)
            // False when the same tokens are already cached in another block; this one then stays uncached.
            pool_.cache_block(block_id, group_hash(request.block_hashes[block_idx], group));
        }
        num_cached = std::max(num_cached, num_full_blocks);
    }
}

void KvManager::free(RequestId request_id) {
    auto it = requests_.find(request_id);
    if (it == requests_.end()) return;
    for (const std::vector<BlockId>& table : it->second.tables) {
        std::vector<BlockId> reversed(table.rbegin(), table.rend());
        pool_.free(reversed);
    }
    requests_.erase(it);
}

std::span<const BlockId> KvManager::block_ids(RequestId request_id, int group) const {
    auto it = requests_.find(request_id);
    if (it == requests_.end()) return {};
    return it->second.tables[static_cast<size_t>(group)];
}

Status KvManager::verify() const {
    TERN_RETURN_IF_ERROR(pool_.verify());
    std::vector<int> num_holders(pool_.num_blocks(), 0);
    std::vector<const RequestBlocks*> last_holder(pool_.num_blocks(), nullptr);
    for (const auto& [request_id, request] : requests_) {
        for (const std::vector<BlockId>& table : request.tables) {
            for (BlockId block_id : table) {
                if (block_id == kNullBlockId) continue;  // a sliding group's released or never-needed block
                if (block_id < kNullBlockId || block_id >= pool_.num_blocks() || last_holder[block_id] == &request) {
                    return internal_error("request " + std::to_string(request_id) + " holds block " +
                                          std::to_string(block_id) + " twice or out of range");
                }
                last_holder[block_id] = &request;
                ++num_holders[block_id];
            }
        }
    }
    for (BlockId block_id = kNullBlockId + 1; block_id < pool_.num_blocks(); ++block_id) {
        if (num_holders[block_id] != pool_.ref_count(block_id)) {
            return internal_error("block " + std::to_string(block_id) + " has ref count " +
                                  std::to_string(pool_.ref_count(block_id)) + " but " +
                                  std::to_string(num_holders[block_id]) + " block tables hold it");
        }
    }
    return Status::ok();
}

}  // namespace tern::kv
