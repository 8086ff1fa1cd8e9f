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

KvManager::KvManager(const KvCacheConfig& config)
    : block_size_(checked(config).block_size),
      hash_seed_(config.hash_seed != 0 ? config.hash_seed : random_seed()),
      pool_(config.num_blocks, config.enable_prefix_caching) {}

ComputedBlocks KvManager::get_computed_blocks(std::span<const TokenId> tokens, std::string_view cache_salt) {
    ComputedBlocks hit;
    if (!pool_.prefix_caching_enabled() || tokens.empty()) return hit;
    // Full blocks among the first size - 1 tokens only: the last token must be computed to get its logits.
    size_t max_blocks = (tokens.size() - 1) / block_size_;
    BlockHash parent_hash = prefix_root(hash_seed_, cache_salt);
    for (size_t block_idx = 0; block_idx < max_blocks; ++block_idx) {
        parent_hash = hash_block_tokens(parent_hash, tokens.subspan(block_idx * block_size_, block_size_));
        std::optional<BlockId> block_id = pool_.lookup(parent_hash);
        if (!block_id) break;
        hit.block_ids.push_back(*block_id);
    }
    hit.num_tokens = static_cast<int>(hit.block_ids.size()) * block_size_;
    ++prefix_cache_stats_.num_queries;
    prefix_cache_stats_.num_queried_tokens += static_cast<int64_t>(tokens.size());
    prefix_cache_stats_.num_hit_tokens += hit.num_tokens;
    return hit;
}

void KvManager::check_computed_blocks(BlockHash root, std::span<const TokenId> tokens,
                                      const ComputedBlocks& new_computed, std::vector<BlockHash>& hashes) const {
    TERN_CHECK(new_computed.num_tokens == static_cast<int>(new_computed.block_ids.size()) * block_size_)
        << "a prefix hit of " << new_computed.block_ids.size() << " blocks claims " << new_computed.num_tokens
        << " tokens";
    extend_block_hashes(root, tokens, block_size_, static_cast<int>(new_computed.block_ids.size()), hashes);
    for (size_t block_idx = 0; block_idx < new_computed.block_ids.size(); ++block_idx) {
        TERN_CHECK(pool_.block_hash(new_computed.block_ids[block_idx]) == hashes[block_idx])
            << "stale prefix hit: block " << new_computed.block_ids[block_idx]
            << " was evicted or reused after get_computed_blocks()";
    }
}

std::optional<std::vector<BlockId>> KvManager::allocate_slots(RequestId request_id, std::span<const TokenId> tokens,
                                                              int num_computed_tokens, int num_new_tokens,
                                                              const ComputedBlocks& new_computed,
                                                              std::string_view cache_salt) {
    auto it = requests_.find(request_id);
    int num_existing_blocks = it == requests_.end() ? 0 : static_cast<int>(it->second.block_ids.size());
    TERN_CHECK(num_computed_tokens >= 0 && num_new_tokens >= 0)
        << "negative token counts " << num_computed_tokens << ", " << num_new_tokens;
    TERN_CHECK(num_computed_tokens <= num_existing_blocks * block_size_)
        << num_computed_tokens << " computed tokens but only " << num_existing_blocks << " blocks";
    TERN_CHECK(new_computed.block_ids.empty() || num_existing_blocks == 0)
        << "a prefix hit is only accepted on a request's first allocation";
    int64_t num_total_tokens = int64_t(num_computed_tokens) + new_computed.num_tokens + num_new_tokens;
    TERN_CHECK(num_total_tokens <= static_cast<int64_t>(tokens.size()))
        << "slots for " << num_total_tokens << " tokens requested but only " << tokens.size() << " are known";
    const BlockHash root = it == requests_.end() ? prefix_root(hash_seed_, cache_salt) : it->second.root;
    std::vector<BlockHash> computed_hashes;
    check_computed_blocks(root, tokens, new_computed, computed_hashes);

    int num_computed_blocks = static_cast<int>(new_computed.block_ids.size());
    int num_required_blocks = static_cast<int>((num_total_tokens + block_size_ - 1) / block_size_);
    int num_new_blocks = std::max(0, num_required_blocks - num_existing_blocks - num_computed_blocks);
    // Hit blocks nobody references sit in the free queue; touching them takes them out of it.
    int num_free_hit_blocks = static_cast<int>(std::count_if(new_computed.block_ids.begin(),
                                                             new_computed.block_ids.end(),
                                                             [&](BlockId id) { return pool_.ref_count(id) == 0; }));
    if (num_new_blocks > pool_.num_free_blocks() - num_free_hit_blocks) return std::nullopt;

    // Touch before allocating, or the allocation could take (and evict) a hit block from the free queue.
    pool_.touch(new_computed.block_ids);
    std::optional<std::vector<BlockId>> new_block_ids = pool_.allocate(num_new_blocks);
    TERN_CHECK(new_block_ids.has_value()) << "allocation failed after the capacity check";

    RequestBlocks& request = requests_[request_id];
    request.root = root;
    if (num_computed_blocks > 0) {
        request.block_ids = new_computed.block_ids;
        request.block_hashes = std::move(computed_hashes);
        request.num_cached_blocks = num_computed_blocks;
    }
    request.block_ids.insert(request.block_ids.end(), new_block_ids->begin(), new_block_ids->end());
    return new_block_ids;
}

void KvManager::cache_computed_blocks(RequestId request_id, std::span<const TokenId> tokens, int num_computed_tokens) {
    auto it = requests_.find(request_id);
    TERN_CHECK(it != requests_.end()) << "caching blocks of request " << request_id << ", which holds none";
    RequestBlocks& request = it->second;
    TERN_CHECK(num_computed_tokens >= 0 && num_computed_tokens <= static_cast<int>(tokens.size()) &&
               num_computed_tokens <= static_cast<int>(request.block_ids.size()) * block_size_)
        << "request " << request_id << ": " << num_computed_tokens << " computed tokens of " << tokens.size()
        << " known, " << request.block_ids.size() << " blocks";
    int num_full_blocks = num_computed_tokens / block_size_;
    if (!pool_.prefix_caching_enabled() || num_full_blocks <= request.num_cached_blocks) return;
    extend_block_hashes(request.root, tokens, block_size_, num_full_blocks, request.block_hashes);
    for (int block_idx = request.num_cached_blocks; block_idx < num_full_blocks; ++block_idx) {
        // False when the same tokens are already cached in another block; this one then stays uncached.
        pool_.cache_block(request.block_ids[block_idx], request.block_hashes[block_idx]);
    }
    request.num_cached_blocks = num_full_blocks;
}

void KvManager::free(RequestId request_id) {
    auto it = requests_.find(request_id);
    if (it == requests_.end()) return;
    std::vector<BlockId> reversed(it->second.block_ids.rbegin(), it->second.block_ids.rend());
    pool_.free(reversed);
    requests_.erase(it);
}

std::span<const BlockId> KvManager::block_ids(RequestId request_id) const {
    auto it = requests_.find(request_id);
    if (it == requests_.end()) return {};
    return it->second.block_ids;
}

Status KvManager::verify() const {
    TERN_RETURN_IF_ERROR(pool_.verify());
    std::vector<int> num_holders(pool_.num_blocks(), 0);
    std::vector<const RequestBlocks*> last_holder(pool_.num_blocks(), nullptr);
    for (const auto& [request_id, request] : requests_) {
        for (BlockId block_id : request.block_ids) {
            if (block_id <= kNullBlockId || block_id >= pool_.num_blocks() || last_holder[block_id] == &request) {
                return internal_error("request " + std::to_string(request_id) + " holds block " +
                                      std::to_string(block_id) + " twice or out of range");
            }
            last_holder[block_id] = &request;
            ++num_holders[block_id];
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
