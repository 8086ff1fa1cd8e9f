#include "kernels/packed_weights.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/check.h"
#include "base/huge_pages.h"
#include "quant/blocks.h"

namespace tern::kernels {
namespace {

// Not zeroed: packing writes every byte of each full group; only a partial last group is cleared.
std::shared_ptr<uint8_t> aligned_buffer(int64_t num_bytes) {
    std::shared_ptr<uint8_t> memory = allocate_large(static_cast<size_t>(num_bytes));
    TERN_CHECK(memory != nullptr) << "cannot allocate " << num_bytes << " bytes for packed weights";
    return memory;
}

void pack_q4_0_block(const BlockQ4_0& block, int64_t lane, uint8_t* group_block) {
    std::memcpy(group_block + lane * 2, &block.d, 2);
    uint8_t* quants = group_block + 32;
    for (int chunk = 0; chunk < 4; ++chunk) {
        for (int byte = 0; byte < 4; ++byte) {
            const int element = 4 * chunk + byte;  // 0..15: low nibble of qs[element] is w[element]
            const uint8_t low = block.qs[element] & 0x0F;
            const uint8_t high = block.qs[element] >> 4;  // w[16 + element]
            quants[chunk * 64 + lane * 4 + byte] = static_cast<uint8_t>(low | high << 4);
        }
    }
}

void pack_q8_0_block(const BlockQ8_0& block, int64_t lane, uint8_t* group_block) {
    std::memcpy(group_block + lane * 2, &block.d, 2);
    uint8_t* quants = group_block + 32;
    for (int element = 0; element < 32; ++element) {
        const int chunk = element / 4;
        quants[chunk * 64 + lane * 4 + element % 4] = static_cast<uint8_t>(block.qs[element] + 128);
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

// Puts the 4-bit `value` of element `element` (0..31) of lane `lane` into a 32-value block of the Q4_0x16 nibble
// layout (chunk c: low nibble element 4c + i, high nibble 16 + 4c + i); the byte's other nibble is kept.
void put_nibble(uint8_t* nibbles, int64_t lane, int element, int value) {
    uint8_t& byte = nibbles[((element % 16) / 4) * 64 + lane * 4 + element % 4];
    byte = static_cast<uint8_t>(element < 16 ? (byte & 0xF0) | value : (byte & 0x0F) | value << 4);
}

// The 6-bit stored value (0..63) of element `element` of a ggml Q6_K block (quant/blocks.h).
int q6_k_value(const BlockQ6_K& block, int element) {
    const int half = element / 128, within = element % 128, quarter = within / 32, lane = within % 32;
    const uint8_t low_byte = block.ql[64 * half + lane + 32 * (quarter & 1)];
    const int low = quarter < 2 ? (low_byte & 0x0F) : (low_byte >> 4);
    const int high = (block.qh[32 * half + lane] >> (2 * quarter)) & 3;
    return low | high << 4;
}

// Whole bytes, not nibble by nibble (put_nibble): one byte of the nibble layout holds lane `lane`'s elements 4c + i
// and 16 + 4c + i, both known here. Packing a 3.2 GB mixture nibble by nibble took most of its 27.5 s load.
void pack_q6_k_block(const BlockQ6_K& block, int64_t lane, uint8_t* group_block) {
    std::memcpy(group_block + lane * 2, &block.d, 2);
    for (int sub_block = 0; sub_block < 16; ++sub_block) {
        group_block[kQ6_Kx16ScalesOffset + sub_block * 16 + lane] = static_cast<uint8_t>(block.scales[sub_block]);
    }
    for (int block32 = 0; block32 < 8; ++block32) {
        uint8_t* nibbles = group_block + kQ6_Kx16QuantsOffset + block32 * kQ6_Kx16BytesPer32;
        uint8_t* top_bits = nibbles + 256;
        int values[32];
        for (int element = 0; element < 32; ++element) values[element] = q6_k_value(block, 32 * block32 + element);
        for (int chunk = 0; chunk < 4; ++chunk) {
            for (int byte = 0; byte < 4; ++byte) {
                const int low = values[4 * chunk + byte] & 0x0F, high = values[16 + 4 * chunk + byte] & 0x0F;
                nibbles[chunk * 64 + lane * 4 + byte] = static_cast<uint8_t>(low | high << 4);
            }
        }
        for (int half = 0; half < 2; ++half) {  // bits 2c..2c+1 of top byte (half, byte): element 16 half + 4c + byte
            for (int byte = 0; byte < 4; ++byte) {
                int top = 0;
                for (int chunk = 0; chunk < 4; ++chunk) {
                    top |= (values[16 * half + 4 * chunk + byte] >> 4) << (2 * chunk);
                }
                top_bits[half * 64 + lane * 4 + byte] = static_cast<uint8_t>(top);
            }
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

// The low 4 bits of element `element` of a Q4_K / Q5_K block's qs (quant/blocks.h).
int k_quant_low_bits(const uint8_t* qs, int element) {
    const int run = element / 64, within = element % 64;
    const uint8_t stored = qs[32 * run + within % 32];
    return within < 32 ? (stored & 0x0F) : (stored >> 4);
}

// Sub-block j's 32 values are the low (j even) or high (j odd) nibbles of qs[32 (j / 2) ..]: written a whole byte
// (two values) at a time, as pack_q6_k_block.
void pack_q4_k_block(const BlockQ4_K& block, int64_t lane, uint8_t* group_block) {
    pack_k_header(block, lane, group_block);
    for (int sub_block = 0; sub_block < 8; ++sub_block) {
        const uint8_t* qs = block.qs + 32 * (sub_block / 2);
        const int shift = 4 * (sub_block % 2);
        uint8_t* nibbles = group_block + kQ4_Kx16QuantsOffset + sub_block * kQ4_Kx16BytesPerSubBlock;
        for (int chunk = 0; chunk < 4; ++chunk) {
            for (int byte = 0; byte < 4; ++byte) {
                const int low = (qs[4 * chunk + byte] >> shift) & 0x0F;
                const int high = (qs[16 + 4 * chunk + byte] >> shift) & 0x0F;
                nibbles[chunk * 64 + lane * 4 + byte] = static_cast<uint8_t>(low | high << 4);
            }
        }
    }
}

void pack_q5_k_block(const BlockQ5_K& block, int64_t lane, uint8_t* group_block) {
    pack_k_header(block, lane, group_block);
    for (int element = 0; element < 256; ++element) {
        uint8_t* sub_block = group_block + kQ4_Kx16QuantsOffset + (element / 32) * kQ5_Kx16BytesPerSubBlock;
        const int in_sub = element % 32;
        put_nibble(sub_block, lane, in_sub, k_quant_low_bits(block.qs, element));
        const int run = element / 64, within = element % 64;
        const int fifth = (block.qh[within % 32] >> (2 * run + within / 32)) & 1;
        const int nibble_chunk = (in_sub % 16) / 4 + 4 * (in_sub / 16);  // chunk k: bit k of the fifth-bit byte
        uint8_t& bits = sub_block[256 + lane * 4 + in_sub % 4];
        bits = static_cast<uint8_t>((bits & ~(1 << nibble_chunk)) | fifth << nibble_chunk);
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
                               std::shared_ptr<uint8_t> destination) {
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
    for (int64_t row_idx = 0; row_idx < view.num_rows; ++row_idx) {
        const Block* blocks = reinterpret_cast<const Block*>(view.row(row_idx));
        uint8_t* group = packed.data.get() + (row_idx / kPackRows) * packed.group_bytes;
        for (int64_t block_idx = 0; block_idx < num_blocks; ++block_idx) {
            pack_block(blocks[block_idx], row_idx % kPackRows, group + block_idx * block_bytes);
        }
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

PackedWeights pack_weights(const MatrixView& view, bool enable, std::shared_ptr<uint8_t> destination) {
    const WeightLayout layout = enable ? packed_layout_for(view.type) : WeightLayout::kRowMajor;
    if (layout == WeightLayout::kQ4_0x16) {
        return pack_interleaved<BlockQ4_0>(view, layout, pack_q4_0_block, std::move(destination));
    }
    if (layout == WeightLayout::kQ8_0x16 && view.type == DType::kQ5_0) {
        return pack_interleaved<BlockQ5_0>(view, layout, pack_q5_0_block, std::move(destination));
    }
    if (layout == WeightLayout::kQ8_0x16) {
        return pack_interleaved<BlockQ8_0>(view, layout, pack_q8_0_block, std::move(destination));
    }
    if (layout == WeightLayout::kQ4_Kx16) {
        return pack_interleaved<BlockQ4_K>(view, layout, pack_q4_k_block, std::move(destination));
    }
    if (layout == WeightLayout::kQ5_Kx16) {
        return pack_interleaved<BlockQ5_K>(view, layout, pack_q5_k_block, std::move(destination));
    }
    if (layout == WeightLayout::kQ6_Kx16) {
        return pack_interleaved<BlockQ6_K>(view, layout, pack_q6_k_block, std::move(destination));
    }
    PackedWeights packed;
    packed.view = view;
    return packed;
}

}  // namespace tern::kernels
