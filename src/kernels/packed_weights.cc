#include "kernels/packed_weights.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/check.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "quant/blocks.h"

namespace tern::kernels {
namespace {

// Not zeroed: packing writes every byte of each full group; only a partial last group is cleared.
std::shared_ptr<uint8_t> aligned_buffer(int64_t num_bytes) {
    std::shared_ptr<uint8_t> memory = allocate_large(static_cast<size_t>(num_bytes), FirstTouch::kByCaller);
    TERN_CHECK(memory != nullptr) << "cannot allocate " << num_bytes << " bytes for packed weights";
    return memory;
}

// The packing works on 32-bit words: 4 bytes of one row are 4 consecutive bytes of a lane in every layout, and
// a byte at a time packed an 8 GB model at about 1 GB/s, most of a 10 s load (perf, 2026-12-07).
uint32_t load_word(const void* source) {
    uint32_t word;
    std::memcpy(&word, source, 4);
    return word;
}

void store_word(uint8_t* destination, uint32_t word) { std::memcpy(destination, &word, 4); }

// Bytes 4c..4c+3 of a 16-byte nibble run `qs` (low nibble: value 4c + i, high: 16 + 4c + i) shifted down by
// `shift` (0 or 4) from two such runs: the Q4_0x16 nibble byte of values taken from the low or high nibbles.
uint32_t nibble_word(const uint8_t* low_run, const uint8_t* high_run, int chunk, int shift) {
    const uint32_t low = (load_word(low_run + 4 * chunk) >> shift) & 0x0F0F0F0Fu;
    const uint32_t high = (load_word(high_run + 4 * chunk) >> shift) & 0x0F0F0F0Fu;
    return low | high << 4;
}

// ggml's Q4_0 byte qs[e] holds w[e] (low nibble) and w[16 + e] (high): already the Q4_0x16 byte of chunk e / 4.
void pack_q4_0_block(const BlockQ4_0& block, int64_t lane, uint8_t* group_block) {
    std::memcpy(group_block + lane * 2, &block.d, 2);
    uint8_t* quants = group_block + 32;
    for (int chunk = 0; chunk < 4; ++chunk) store_word(quants + chunk * 64 + lane * 4, load_word(block.qs + 4 * chunk));
}

void pack_q8_0_block(const BlockQ8_0& block, int64_t lane, uint8_t* group_block) {
    std::memcpy(group_block + lane * 2, &block.d, 2);
    uint8_t* quants = group_block + 32;
    for (int chunk = 0; chunk < 8; ++chunk) {  // + 128 on each byte is a flip of its top bit
        store_word(quants + chunk * 64 + lane * 4, load_word(block.qs + 4 * chunk) ^ 0x80808080u);
    }
}

// Q5_0 widened to Q8_0x16: its values d * (q - 16), q in 0..31, are Q8_0 values with the same fp16 scale and
// int8 quants q - 16, so nothing is rounded. It costs 8.5 bits read per weight instead of 5.5; without it Q5_0 took
// the row-major float path, 10x slower than llama.cpp on gemma3-1b Q4_K (whose 1,152-wide rows fall back to Q5_0, as
// in llama-quantize's Q4_K_M files).
void pack_q5_0_block(const BlockQ5_0& block, int64_t lane, uint8_t* group_block) {
    BlockQ8_0 widened;
    widened.d = block.d;
    uint32_t fifth_bits;
    std::memcpy(&fifth_bits, block.qh, sizeof(fifth_bits));
    for (int element = 0; element < 16; ++element) {
        const int low = (block.qs[element] & 0x0F) | ((fifth_bits >> element) & 1) << 4;
        const int high = (block.qs[element] >> 4) | ((fifth_bits >> (element + 16)) & 1) << 4;
        widened.qs[element] = static_cast<int8_t>(low - 16);
        widened.qs[element + 16] = static_cast<int8_t>(high - 16);
    }
    pack_q8_0_block(widened, lane, group_block);
}

// ggml's Q6_K keeps 32-value block b (half b / 4, quarter b % 4) as nibbles of ql[64 half + 32 (quarter & 1) ..]
// (low nibbles for quarters 0-1, high for 2-3) and bits 2 quarter.. of qh[32 half ..] (quant/blocks.h).
void pack_q6_k_block(const BlockQ6_K& block, int64_t lane, uint8_t* group_block) {
    std::memcpy(group_block + lane * 2, &block.d, 2);
    for (int sub_block = 0; sub_block < 16; ++sub_block) {
        group_block[kQ6_Kx16ScalesOffset + sub_block * 16 + lane] = static_cast<uint8_t>(block.scales[sub_block]);
    }
    for (int block32 = 0; block32 < 8; ++block32) {
        const int half = block32 / 4, quarter = block32 % 4;
        const uint8_t* low_bits = block.ql + 64 * half + 32 * (quarter & 1);
        const uint8_t* high_bits = block.qh + 32 * half;
        uint8_t* nibbles = group_block + kQ6_Kx16QuantsOffset + block32 * kQ6_Kx16BytesPer32;
        uint8_t* top_bits = nibbles + 256;
        const int shift = quarter < 2 ? 0 : 4;
        for (int chunk = 0; chunk < 4; ++chunk) {
            store_word(nibbles + chunk * 64 + lane * 4, nibble_word(low_bits, low_bits + 16, chunk, shift));
        }
        // Top-bit byte (h, i) of a lane holds, at bits 2c..2c+1, the top two bits of value 16h + 4c + i.
        for (int top_half = 0; top_half < 2; ++top_half) {
            uint32_t top = 0;
            for (int chunk = 0; chunk < 4; ++chunk) {
                const uint32_t bits = (load_word(high_bits + 16 * top_half + 4 * chunk) >> (2 * quarter)) & 0x03030303u;
                top |= bits << (2 * chunk);
            }
            store_word(top_bits + top_half * 64 + lane * 4, top);
        }
    }
}

// The Q4_K / Q5_K header: d, dmin and the packed scale words.
template <typename Block>
void pack_k_header(const Block& block, int64_t lane, uint8_t* group_block) {
    std::memcpy(group_block + lane * 2, &block.d, 2);
    std::memcpy(group_block + kQ4_Kx16MinScalesOffset + lane * 2, &block.dmin, 2);
    for (int word = 0; word < 3; ++word) {
        std::memcpy(group_block + kQ4_Kx16ScaleWordsOffset + word * 64 + lane * 4, block.scales + 4 * word, 4);
    }
}

// Sub-block j's 32 values are the low (j even) or high (j odd) nibbles of qs[32 (j / 2) ..] (quant/blocks.h), as
// in Q5_K, whose bytes for them sit `sub_block_bytes` apart in the packed block.
void pack_k_nibbles(const uint8_t* qs, int64_t lane, uint8_t* quants, int64_t sub_block_bytes) {
    for (int sub_block = 0; sub_block < 8; ++sub_block) {
        const uint8_t* run = qs + 32 * (sub_block / 2);
        uint8_t* nibbles = quants + sub_block * sub_block_bytes;
        for (int chunk = 0; chunk < 4; ++chunk) {
            store_word(nibbles + chunk * 64 + lane * 4, nibble_word(run, run + 16, chunk, 4 * (sub_block % 2)));
        }
    }
}

void pack_q4_k_block(const BlockQ4_K& block, int64_t lane, uint8_t* group_block) {
    pack_k_header(block, lane, group_block);
    pack_k_nibbles(block.qs, lane, group_block + kQ4_Kx16QuantsOffset, kQ4_Kx16BytesPerSubBlock);
}

// The fifth bit of value i of sub-block j is bit j of qh[i]; the packed byte i of a lane has, at bit k, the fifth
// bit of the value in nibble chunk k (value 4k + i for k < 4, 16 + 4 (k - 4) + i after).
void pack_q5_k_block(const BlockQ5_K& block, int64_t lane, uint8_t* group_block) {
    pack_k_header(block, lane, group_block);
    uint8_t* quants = group_block + kQ4_Kx16QuantsOffset;
    pack_k_nibbles(block.qs, lane, quants, kQ5_Kx16BytesPerSubBlock);
    for (int sub_block = 0; sub_block < 8; ++sub_block) {
        uint32_t fifth = 0;
        for (int k = 0; k < 8; ++k) {
            const int first_value = k < 4 ? 4 * k : 16 + 4 * (k - 4);
            fifth |= ((load_word(block.qh + first_value) >> sub_block) & 0x01010101u) << k;
        }
        store_word(quants + sub_block * kQ5_Kx16BytesPerSubBlock + 256 + lane * 4, fifth);
    }
}

// A packed layout's (values, bytes) per group-block.
std::pair<int64_t, int64_t> group_block_shape(WeightLayout layout) {
    switch (layout) {
        case WeightLayout::kQ4_0x16: return {kQK, kQ4_0x16BlockBytes};
        case WeightLayout::kQ8_0x16: return {kQK, kQ8_0x16BlockBytes};
        case WeightLayout::kQ4_Kx16: return {kQK_K, kQ4_Kx16BlockBytes};
        case WeightLayout::kQ5_Kx16: return {kQK_K, kQ5_Kx16BlockBytes};
        case WeightLayout::kQ6_Kx16: return {kQK_K, kQ6_Kx16BlockBytes};
        case WeightLayout::kRowMajor: break;
    }
    return {1, 0};
}

// The layout's `values_per_block` columns of one row go into each `block_bytes` group-block.
template <typename Block, typename PackFn>
PackedWeights pack_interleaved(const MatrixView& view, WeightLayout layout, PackFn pack_block,
                               std::shared_ptr<uint8_t> destination, ThreadPool* pool) {
    const auto [values_per_block, block_bytes] = group_block_shape(layout);
    PackedWeights packed;
    packed.view = view;
    packed.layout = layout;
    const int64_t num_blocks = view.row_length / values_per_block;
    packed.num_groups = (view.num_rows + kPackRows - 1) / kPackRows;
    packed.group_bytes = num_blocks * block_bytes;
    packed.data = destination ? std::move(destination) : aligned_buffer(packed.num_groups * packed.group_bytes);
    if (view.num_rows % kPackRows != 0) {  // padding lanes of the last group: zero scales and quants
        std::memset(packed.data.get() + (packed.num_groups - 1) * packed.group_bytes, 0,
                    static_cast<size_t>(packed.group_bytes));
    }
    const auto pack_groups = [&](int64_t group_begin, int64_t group_end, int) {
        const int64_t row_end = std::min(view.num_rows, group_end * kPackRows);
        for (int64_t row_idx = group_begin * kPackRows; row_idx < row_end; ++row_idx) {
            const Block* blocks = reinterpret_cast<const Block*>(view.row(row_idx));
            uint8_t* group = packed.data.get() + (row_idx / kPackRows) * packed.group_bytes;
            for (int64_t block_idx = 0; block_idx < num_blocks; ++block_idx) {
                pack_block(blocks[block_idx], row_idx % kPackRows, group + block_idx * block_bytes);
            }
        }
    };
    if (pool != nullptr) {
        pool->parallel_for(packed.num_groups, pack_groups);
    } else {
        pack_groups(0, packed.num_groups, 0);
    }
    return packed;
}

}  // namespace

const char* weight_layout_name(WeightLayout layout) {
    switch (layout) {
        case WeightLayout::kRowMajor: return "row-major";
        case WeightLayout::kQ4_0x16: return "q4_0x16";
        case WeightLayout::kQ8_0x16: return "q8_0x16";
        case WeightLayout::kQ6_Kx16: return "q6_Kx16";
        case WeightLayout::kQ4_Kx16: return "q4_Kx16";
        case WeightLayout::kQ5_Kx16: return "q5_Kx16";
    }
    return "unknown";
}

WeightLayout packed_layout_for(DType type) {
    switch (type) {
        case DType::kQ4_0: return WeightLayout::kQ4_0x16;
        case DType::kQ8_0: return WeightLayout::kQ8_0x16;
        case DType::kQ5_0: return WeightLayout::kQ8_0x16;  // widened without rounding (pack_q5_0_block)
        case DType::kQ6_K: return WeightLayout::kQ6_Kx16;
        case DType::kQ4_K: return WeightLayout::kQ4_Kx16;
        case DType::kQ5_K: return WeightLayout::kQ5_Kx16;
        default: return WeightLayout::kRowMajor;
    }
}

int64_t packed_bytes(const MatrixView& view, bool enable) {
    const WeightLayout layout = enable ? packed_layout_for(view.type) : WeightLayout::kRowMajor;
    const auto [values_per_block, block_bytes] = group_block_shape(layout);
    const int64_t num_groups = (view.num_rows + kPackRows - 1) / kPackRows;
    const int64_t bytes = num_groups * (view.row_length / values_per_block) * block_bytes;
    return (bytes + 63) / 64 * 64;
}

PackedWeights pack_weights(const MatrixView& view, bool enable, std::shared_ptr<uint8_t> destination,
                           ThreadPool* pool) {
    const WeightLayout layout = enable ? packed_layout_for(view.type) : WeightLayout::kRowMajor;
    if (layout == WeightLayout::kQ4_0x16) {
        return pack_interleaved<BlockQ4_0>(view, layout, pack_q4_0_block, std::move(destination), pool);
    }
    if (layout == WeightLayout::kQ8_0x16 && view.type == DType::kQ5_0) {
        return pack_interleaved<BlockQ5_0>(view, layout, pack_q5_0_block, std::move(destination), pool);
    }
    if (layout == WeightLayout::kQ8_0x16) {
        return pack_interleaved<BlockQ8_0>(view, layout, pack_q8_0_block, std::move(destination), pool);
    }
    if (layout == WeightLayout::kQ4_Kx16) {
        return pack_interleaved<BlockQ4_K>(view, layout, pack_q4_k_block, std::move(destination), pool);
    }
    if (layout == WeightLayout::kQ5_Kx16) {
        return pack_interleaved<BlockQ5_K>(view, layout, pack_q5_k_block, std::move(destination), pool);
    }
    if (layout == WeightLayout::kQ6_Kx16) {
        return pack_interleaved<BlockQ6_K>(view, layout, pack_q6_k_block, std::move(destination), pool);
    }
    PackedWeights packed;
    packed.view = view;
    return packed;
}

}  // namespace tern::kernels
