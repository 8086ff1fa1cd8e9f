// The free KV blocks in eviction order, as an intrusive doubly linked list over block ids. It only orders ids;
// reference counts and cached hashes belong to BlockPool.
#pragma once

#include <cstdint>
#include <vector>

namespace tern::kv {

using BlockId = int32_t;

// Head = next to allocate (least recently freed), tail = most recently freed. Links live in arrays indexed by
// block id, so a cached free block that gets a prefix hit leaves from the middle in O(1) (vLLM's
// FreeKVCacheBlockQueue does the same with prev/next pointers on the blocks). Not thread-safe.
class FreeBlockQueue {
public:
    // Ids in [0, num_ids) may be queued; the queue starts empty.
    explicit FreeBlockQueue(int num_ids);

    int size() const { return size_; }
    bool empty() const { return size_ == 0; }
    bool contains(BlockId block_id) const;

    // The queue must not be empty / the id must (not) be queued; all checked.
    BlockId pop_front();
    void push_back(BlockId block_id);
    void remove(BlockId block_id);

    // Head to tail. Walks the links, so it is also how the invariant checks see the list.
    std::vector<BlockId> to_vector() const;

private:
    static constexpr BlockId kUnlinked = -1;
    BlockId sentinel() const { return static_cast<BlockId>(next_.size()) - 1; }
    void check_id(BlockId block_id) const;

    // One slot per id plus a sentinel at the end: next_[sentinel] is the head, prev_[sentinel] the tail.
    std::vector<BlockId> prev_;
    std::vector<BlockId> next_;
    int size_ = 0;
};

}  // namespace tern::kv
