#include "kernels/packed_weights.h"

#include <cstdlib>
#include <cstring>

#include "base/check.h"
#include "quant/blocks.h"

namespace tern::kernels {
namespace {

// Not zeroed: packing writes every byte of each full group; only a partial last group is cleared.
std::shared_ptr<uint8_t> aligned_buffer(int64_t num_bytes) {
    const size_t size = static_cast<size_t>((num_bytes + 63) / 64 * 64);
    void* memory = std::aligned_alloc(64, size);
    TERN_CHECK(memory != nullptr) << "cannot allocate " << size << " bytes for packed weights";
    return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(memory), [](uint8_t* pointer) { std::free(pointer); });
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

// The 6-bit stored value (0..63) of element `element` of a ggml Q6_K block (quant/blocks.h).
int q6_k_value(const BlockQ6_K& block, int element) {
    const int half = element / 128, within = element % 128, quarter = within / 32, lane = within % 32;
    const uint8_t low_byte = block.ql[64 * half + lane + 32 * (quarter & 1)];
    const int low = quarter < 2 ? (low_byte & 0x0F) : (low_byte >> 4);
    const int high = (block.qh[32 * half + lane] >> (2 * quarter)) & 3;
    return low | high << 4;
}

void pack_q6_k_block(const BlockQ6_K& block, int64_t lane, uint8_t* group_block) {
    std::memcpy(group_block + lane * 2, &block.d, 2);
    for (int sub_block = 0; sub_block < 16; ++sub_block) {
        group_block[kQ6_Kx16ScalesOffset + sub_block * 16 + lane] = static_cast<uint8_t>(block.scales[sub_block]);
    }
    for (int block32 = 0; block32 < 8; ++block32) {
        uint8_t* nibbles = group_block + kQ6_Kx16QuantsOffset + block32 * kQ6_Kx16BytesPer32;
        uint8_t* top_bits = nibbles + 256;
        for (int element = 0; element < 32; ++element) {
            const int value = q6_k_value(block, 32 * block32 + element);
            const int half = element / 16, chunk = (element % 16) / 4, byte = element % 4;
            uint8_t& nibble_byte = nibbles[chunk * 64 + lane * 4 + byte];
            nibble_byte = static_cast<uint8_t>(half == 0 ? (nibble_byte & 0xF0) | (value & 0x0F)
                                                         : (nibble_byte & 0x0F) | (value & 0x0F) << 4);
            uint8_t& top_byte = top_bits[half * 64 + lane * 4 + byte];
            top_byte = static_cast<uint8_t>((top_byte & ~(3 << (2 * chunk))) | (value >> 4) << (2 * chunk));
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

// Element e of a Q4_K / Q5_K block: its low 4 bits, and where it goes in a sub-block of the packed layout.
struct KQuantElement {
    int low_bits;
    int sub_block;
    int nibble_chunk;  // 0..7: chunk k < 4 holds low nibbles of vector k, k >= 4 high nibbles of vector k - 4
    int byte;
};

KQuantElement k_quant_element(const uint8_t* qs, int element) {
    const int run = element / 64, within = element % 64;
    const uint8_t stored = qs[32 * run + within % 32];
    const int in_sub = element % 32;
    return {within < 32 ? (stored & 0x0F) : (stored >> 4), element / 32, in_sub / 4 % 4 + 4 * (in_sub / 16),
            in_sub % 4};
}

void pack_nibble(const KQuantElement& e, int64_t lane, uint8_t* sub_block) {
    uint8_t& packed = sub_block[(e.nibble_chunk % 4) * 64 + lane * 4 + e.byte];
    packed = static_cast<uint8_t>(e.nibble_chunk < 4 ? (packed & 0xF0) | e.low_bits : (packed & 0x0F) | e.low_bits << 4);
}

void pack_q4_k_block(const BlockQ4_K& block, int64_t lane, uint8_t* group_block) {
    pack_k_header(block, lane, group_block);
    for (int element = 0; element < 256; ++element) {
        const KQuantElement e = k_quant_element(block.qs, element);
        pack_nibble(e, lane, group_block + kQ4_Kx16QuantsOffset + e.sub_block * kQ4_Kx16BytesPerSubBlock);
    }
}

void pack_q5_k_block(const BlockQ5_K& block, int64_t lane, uint8_t* group_block) {
    pack_k_header(block, lane, group_block);
    for (int element = 0; element < 256; ++element) {
        const KQuantElement e = k_quant_element(block.qs, element);
        uint8_t* sub_block = group_block + kQ4_Kx16QuantsOffset + e.sub_block * kQ5_Kx16BytesPerSubBlock;
        pack_nibble(e, lane, sub_block);
        const int run = element / 64, within = element % 64;
        const int fifth = (block.qh[within % 32] >> (2 * run + within / 32)) & 1;
        uint8_t& bits = sub_block[256 + lane * 4 + e.byte];
        bits = static_cast<uint8_t>((bits & ~(1 << e.nibble_chunk)) | fifth << e.nibble_chunk);
    }
}

// `values_per_block` columns of one row go into each `block_bytes` group-block.
template <typename Block, typename PackFn>
PackedWeights pack_interleaved(const MatrixView& view, WeightLayout layout, int64_t values_per_block,
                               int64_t block_bytes, PackFn pack_block) {
    PackedWeights packed;
    packed.view = view;
    packed.layout = layout;
    const int64_t num_blocks = view.row_length / values_per_block;
    packed.num_groups = (view.num_rows + kPackRows - 1) / kPackRows;
    packed.group_bytes = num_blocks * block_bytes;
    packed.data = aligned_buffer(packed.num_groups * packed.group_bytes);
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
        case DType::kQ6_K: return WeightLayout::kQ6_Kx16;
        case DType::kQ4_K: return WeightLayout::kQ4_Kx16;
        case DType::kQ5_K: return WeightLayout::kQ5_Kx16;
        default: return WeightLayout::kRowMajor;
    }
}

PackedWeights pack_weights(const MatrixView& view, bool enable) {
    const WeightLayout layout = enable ? packed_layout_for(view.type) : WeightLayout::kRowMajor;
    if (layout == WeightLayout::kQ4_0x16) {
        return pack_interleaved<BlockQ4_0>(view, layout, kQK, kQ4_0x16BlockBytes, pack_q4_0_block);
    }
    if (layout == WeightLayout::kQ8_0x16) {
        return pack_interleaved<BlockQ8_0>(view, layout, kQK, kQ8_0x16BlockBytes, pack_q8_0_block);
    }
    if (layout == WeightLayout::kQ4_Kx16) {
        return pack_interleaved<BlockQ4_K>(view, layout, kQK_K, kQ4_Kx16BlockBytes, pack_q4_k_block);
    }
    if (layout == WeightLayout::kQ5_Kx16) {
        return pack_interleaved<BlockQ5_K>(view, layout, kQK_K, kQ5_Kx16BlockBytes, pack_q5_k_block);
    }
    if (layout == WeightLayout::kQ6_Kx16) {
        return pack_interleaved<BlockQ6_K>(view, layout, kQK_K, kQ6_Kx16BlockBytes, pack_q6_k_block);
    }
    PackedWeights packed;
    packed.view = view;
    return packed;
}

}  // namespace tern::kernels
