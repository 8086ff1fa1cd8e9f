// How attention kernels find the cached keys and values of one KV head: positions live in fixed-size blocks
// scattered through the KV cache (paged attention), position p at row p % block_size of block p / block_size.
#pragma once

#include <cstdint>

namespace tern::kernels {

// Element type of cached K/V rows. Q8_0 rows are ggml block_q8_0 runs (fp16 scale + 32 int8 per 32 elements), so a
// head's slice must start and end on a 32-element boundary.
enum class KvType : uint8_t { kF32, kF16, kQ8_0 };

inline int64_t kv_row_bytes(KvType type, int64_t num_elements) {
    switch (type) {
        case KvType::kF32: return num_elements * 4;
        case KvType::kF16: return num_elements * 2;
        case KvType::kQ8_0: return num_elements / 32 * 34;
    }
    return 0;
}

struct PagedKv {
    const uint8_t* const* key_blocks;    // per block: the address of this head's slice in the block's row 0
    const uint8_t* const* value_blocks;  // likewise for values
    int64_t block_size;                  // rows per block
    int64_t row_stride;                  // bytes from one row of a block to the next
    KvType type;

    const uint8_t* key_row(int64_t position) const {
        return key_blocks[position / block_size] + position % block_size * row_stride;
    }
    const uint8_t* value_row(int64_t position) const {
        return value_blocks[position / block_size] + position % block_size * row_stride;
    }
};

// Converts one cached head slice of `head_dim` elements to floats.
void load_kv_row(KvType type, const uint8_t* row, int64_t head_dim, float* out);

}  // namespace tern::kernels
