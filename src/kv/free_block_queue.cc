#include "kv/free_block_queue.h"

#include "base/check.h"

namespace tern::kv {

FreeBlockQueue::FreeBlockQueue(int num_ids) : prev_(num_ids + 1, kUnlinked), next_(num_ids + 1, kUnlinked) {
    TERN_CHECK(num_ids >= 0) << "num_ids " << num_ids;
    prev_[sentinel()] = sentinel();
    next_[sentinel()] = sentinel();
}

void FreeBlockQueue::check_id(BlockId block_id) const {
    TERN_CHECK(block_id >= 0 && block_id < sentinel()) << "block id " << block_id << " out of range";
}

bool FreeBlockQueue::contains(BlockId block_id) const {
    check_id(block_id);
    return next_[block_id] != kUnlinked;
}

BlockId FreeBlockQueue::pop_front() {
    TERN_CHECK(size_ > 0) << "pop_front on an empty free queue";
    BlockId head = next_[sentinel()];
    remove(head);
    return head;
}

void FreeBlockQueue::push_back(BlockId block_id) {
    TERN_CHECK(!contains(block_id)) << "block " << block_id << " is already in the free queue";
    BlockId tail = prev_[sentinel()];
    next_[tail] = block_id;
    prev_[block_id] = tail;
    next_[block_id] = sentinel();
    prev_[sentinel()] = block_id;
    ++size_;
}

void FreeBlockQueue::remove(BlockId block_id) {
    TERN_CHECK(contains(block_id)) << "block " << block_id << " is not in the free queue";
    next_[prev_[block_id]] = next_[block_id];
    prev_[next_[block_id]] = prev_[block_id];
    prev_[block_id] = kUnlinked;
    next_[block_id] = kUnlinked;
    --size_;
}

std::vector<BlockId> FreeBlockQueue::to_vector() const {
    std::vector<BlockId> ids;
    // Bounded so that a corrupted (cyclic or broken) list ends the walk; the caller then sees a size mismatch.
    for (BlockId id = next_[sentinel()]; id >= 0 && id != sentinel() && ids.size() <= next_.size(); id = next_[id]) {
        ids.push_back(id);
    }
    return ids;
}

}  // namespace tern::kv
