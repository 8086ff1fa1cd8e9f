// The KV cache's storage: fixed-size blocks of positions, each holding the key and value rows of every layer (or,
// for a model with KV groups, of one group's layers: model/kv_groups.h), in f32, f16 or q8_0. Which blocks a
// sequence uses is its block table (from the KV manager in serving, or a fixed run of blocks per slot for
// single-sequence generation and tests); the model reads and writes through tables.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kernels/paged_kv.h"
#include "model/hparams.h"

namespace tern {

using kernels::KvType;

std::string_view kv_type_name(KvType type);  // "f32", "f16", "q8_0"
Result<KvType> parse_kv_type(std::string_view name);

class KvCache {
public:
    // Blocks are stored in runs of this many consecutive ids (see slice_address).
    static constexpr int64_t kBlocksPerRun = 16;

    // Bytes of one block: K and V rows of `layers_per_block` layers (0: every layer) for `block_size` positions.
    static int64_t bytes_per_block(const HParams& hparams, int64_t block_size, KvType type,
                                   int64_t layers_per_block = 0);
    // Fails when the model's head size does not suit `type` (q8_0 needs multiples of 32) or sizes are not positive.
    static Status check_type(const HParams& hparams, KvType type);

    // A paged cache of `num_blocks` blocks (block 0 included; the KV manager never hands it out) of
    // `layers_per_block` layer slots each (0: every layer).
    static Result<std::unique_ptr<KvCache>> create_paged(const HParams& hparams, int64_t num_blocks,
                                                         int64_t block_size, KvType type,
                                                         int64_t layers_per_block = 0);

    // A cache of `num_slots` sequences of up to `max_tokens` positions each, slot s owning a fixed run of blocks:
    // batches without block tables address it by slot.
    KvCache(const HParams& hparams, int64_t num_slots, int64_t max_tokens, KvType type = KvType::kF32,
            int64_t block_size = 16);

    KvType type() const { return type_; }
    int64_t block_size() const { return block_size_; }
    int64_t num_blocks() const { return num_blocks_; }
    int64_t slice_bytes() const { return slice_bytes_; }  // one position's K (or V) for one KV head of one layer
    int64_t num_bytes() const { return num_blocks_ * block_bytes_; }
    int64_t num_slots() const { return num_slots_; }    // 0 for a paged cache
    int64_t max_tokens() const { return max_tokens_; }  // per slot; 0 for a paged cache
    int64_t layers_per_block() const { return num_layers_; }

    std::span<const int32_t> slot_block_table(int64_t slot) const {
        return {slot_tables_.data() + slot * blocks_per_slot_, static_cast<size_t>(blocks_per_slot_)};
    }
    // Position `row` of `block` for one KV head of the layer in slot `layer_slot` of the block (the layer's index
    // when blocks hold every layer); the head's next position follows at slice_bytes().
    uint8_t* key_slice(int64_t layer_slot, int64_t block, int64_t kv_head, int64_t row) {
        return slice_address(layer_slot, block, kv_head, row, 0);
    }
    uint8_t* value_slice(int64_t layer_slot, int64_t block, int64_t kv_head, int64_t row) {
        return slice_address(layer_slot, block, kv_head, row, 1);
    }
    // Block `to` becomes a copy of block `from`: every layer's K and V rows.
    void copy_block(int64_t from, int64_t to);

private:
    struct PagedTag {};
    KvCache(PagedTag, const HParams& hparams, int64_t num_blocks, int64_t block_size, KvType type,
            int64_t layers_per_block);
    // Layout: blocks are stored in runs of kBlocksPerRun consecutive ids (the last run may be shorter), and a run
    // is [layer][K, V][KV head][block][row][slice_bytes]: each head's positions in a block are one run of memory,
    // and so are those of consecutive blocks of a run, which a sequence gets whenever its blocks are allocated
    // together (a prompt's). Attention reads a head's positions in order, and the hardware prefetchers follow a
    // long run far better than a 16-position piece of it every few KiB (decode attention from memory: 32 GFLOP/s
    // with 16-position pieces, 50 with 256, one core).
    uint8_t* slice_address(int64_t layer_idx, int64_t block, int64_t kv_head, int64_t row, int64_t which) {
        const int64_t run = block / kBlocksPerRun, first_block = run * kBlocksPerRun;
        const int64_t run_blocks = std::min(kBlocksPerRun, num_blocks_ - first_block);
        const int64_t head_run = (layer_idx * 2 + which) * num_kv_heads_ + kv_head;
        return storage_.get() + first_block * block_bytes_ +
               ((head_run * run_blocks + block - first_block) * block_size_ + row) * slice_bytes_;
    }

    KvType type_;
    int64_t block_size_;
    int64_t num_blocks_;
    int64_t num_layers_;  // layer slots per block
    int64_t num_kv_heads_;
    int64_t slice_bytes_;
    int64_t block_bytes_;
    int64_t num_slots_ = 0;
    int64_t max_tokens_ = 0;
    int64_t blocks_per_slot_ = 0;
    std::vector<int32_t> slot_tables_;
    std::shared_ptr<uint8_t> storage_;  // on huge pages (base/huge_pages.h); a position is written before it is read
};

}  // namespace tern
