#include "kv/block_pool.h"

#include <algorithm>
#include <string>

#include "base/check.h"

namespace tern::kv {

BlockPool::BlockPool(int num_blocks, bool enable_prefix_caching)
    : blocks_(num_blocks), free_queue_(num_blocks), enable_prefix_caching_(enable_prefix_caching) {
    TERN_CHECK(num_blocks >= 2) << "a block pool needs the null block and one usable block, got " << num_blocks;
    for (BlockId block_id = kNullBlockId + 1; block_id < num_blocks; ++block_id) {
        free_queue_.push_back(block_id);
    }
}

void BlockPool::check_id(BlockId block_id) const {
    TERN_CHECK(block_id >= 0 && block_id < num_blocks()) << "block id " << block_id << " out of range";
}

double BlockPool::usage() const {
    return 1.0 - static_cast<double>(num_free_blocks()) / num_usable_blocks();
}

std::optional<std::vector<BlockId>> BlockPool::allocate(int count) {
    TERN_CHECK(count >= 0) << "allocate(" << count << ")";
    if (count > num_free_blocks()) return std::nullopt;
    std::vector<BlockId> block_ids;
    block_ids.reserve(count);
    for (int i = 0; i < count; ++i) {
        BlockId block_id = free_queue_.pop_front();
        Block& block = blocks_[block_id];
        TERN_CHECK(block.ref_count == 0) << "free block " << block_id << " has ref count " << block.ref_count;
        if (block.hash) {
            hash_to_block_.erase(*block.hash);
            block.hash.reset();
            ++stats_.num_evicted_blocks;
        }
        block.ref_count = 1;
        block_ids.push_back(block_id);
    }
    stats_.num_allocated_blocks += count;
    // Which blocks go is the queue's (LRU) choice; in what order they fill positions is free, and ascending ids
    // put a prompt's positions in one stretch of memory (the KV cache stores consecutive ids together).
    std::sort(block_ids.begin(), block_ids.end());
    return block_ids;
}

void BlockPool::touch(std::span<const BlockId> block_ids) {
    for (BlockId block_id : block_ids) {
        check_id(block_id);
        if (block_id == kNullBlockId) continue;
        Block& block = blocks_[block_id];
        if (block.ref_count == 0) free_queue_.remove(block_id);
        ++block.ref_count;
    }
}

void BlockPool::free(std::span<const BlockId> block_ids) {
    for (BlockId block_id : block_ids) {
        check_id(block_id);
        if (block_id == kNullBlockId) continue;
        Block& block = blocks_[block_id];
        TERN_CHECK(block.ref_count > 0) << "double free of block " << block_id << " (ref count already 0)";
        if (--block.ref_count == 0) free_queue_.push_back(block_id);
    }
}

std::optional<BlockId> BlockPool::lookup(BlockHash hash) const {
    auto it = hash_to_block_.find(hash);
    if (it == hash_to_block_.end()) return std::nullopt;
    return it->second;
}

bool BlockPool::cache_block(BlockId block_id, BlockHash hash) {
    check_id(block_id);
    Block& block = blocks_[block_id];
    TERN_CHECK(block_id != kNullBlockId && block.ref_count > 0) << "caching unreferenced block " << block_id;
    TERN_CHECK(!block.hash) << "block " << block_id << " is already cached";
    if (!enable_prefix_caching_) return false;
    if (!hash_to_block_.emplace(hash, block_id).second) return false;
    block.hash = hash;
    return true;
}

bool BlockPool::reset_prefix_cache() {
    if (num_free_blocks() != num_usable_blocks()) return false;
    hash_to_block_.clear();
    for (Block& block : blocks_) block.hash.reset();
    return true;
}

int BlockPool::ref_count(BlockId block_id) const {
    check_id(block_id);
    return blocks_[block_id].ref_count;
}

std::optional<BlockHash> BlockPool::block_hash(BlockId block_id) const {
    check_id(block_id);
    return blocks_[block_id].hash;
}

Status BlockPool::verify_queue() const {
    std::vector<BlockId> queued = free_queue_.to_vector();
    if (static_cast<int>(queued.size()) != free_queue_.size()) {
        return internal_error("free queue walk finds " + std::to_string(queued.size()) + " blocks, size says " +
                              std::to_string(free_queue_.size()));
    }
    std::vector<bool> seen(blocks_.size(), false);
    for (BlockId block_id : queued) {
        if (block_id <= kNullBlockId || block_id >= num_blocks() || seen[block_id]) {
            return internal_error("free queue holds block " + std::to_string(block_id) + " twice or out of range");
        }
        seen[block_id] = true;
    }
    for (BlockId block_id = 0; block_id < num_blocks(); ++block_id) {
        int ref_count = blocks_[block_id].ref_count;
        bool expect_queued = block_id != kNullBlockId && ref_count == 0;
        if (ref_count < 0 || seen[block_id] != expect_queued || free_queue_.contains(block_id) != expect_queued) {
            return internal_error("block " + std::to_string(block_id) + " has ref count " + std::to_string(ref_count) +
                                  (seen[block_id] ? " but is" : " but is not") + " in the free queue");
        }
    }
    return Status::ok();
}

Status BlockPool::verify() const {
    TERN_RETURN_IF_ERROR(verify_queue());
    const Block& null_block = blocks_[kNullBlockId];
    if (null_block.ref_count != 0 || null_block.hash) return internal_error("the null block was used");
    if (!enable_prefix_caching_ && !hash_to_block_.empty()) return internal_error("hashes cached while disabled");
    for (const auto& [hash, block_id] : hash_to_block_) {
        if (block_id <= kNullBlockId || block_id >= num_blocks() || blocks_[block_id].hash != hash) {
            return internal_error("hash map entry points at block " + std::to_string(block_id) +
                                  ", which does not carry that hash");
        }
    }
    size_t num_hashed = 0;
    for (const Block& block : blocks_) num_hashed += block.hash.has_value();
    if (num_hashed != hash_to_block_.size()) {
        return internal_error(std::to_string(num_hashed) + " blocks carry a hash but the map holds " +
                              std::to_string(hash_to_block_.size()));
    }
    return Status::ok();
}

}  // namespace tern::kv
