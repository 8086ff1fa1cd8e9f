// Weights repacked at load time into layouts that int8 dot-product kernels stream at memory speed.
//
// Q4_0x16 / Q8_0x16 interleave 16 rows. For each group of 16 rows, the 32-column blocks follow one another:
//
//   Q4_0x16 group-block (288 bytes):  d[16] fp16 | 4 x 64 bytes of nibbles
//     byte b of lane r (4 bytes per row) in chunk c: low nibble = w[r][4c + b], high nibble = w[r][16 + 4c + b]
//     (the stored nibble is the ggml value 0..15; the weight is d * (nibble - 8))
//   Q8_0x16 group-block (544 bytes):  d[16] fp16 | 8 x 64 bytes
//     byte b of lane r in chunk c: w[r][4c + b] + 128, as an unsigned byte
//
//   Q6_Kx16 group-block (3360 bytes, one 256-value super-block of 16 rows):
//     d[16] fp16 | scales[16 sub-blocks][16 rows] int8 | per 32-value block b: 4 x 64 bytes of nibbles, 2 x 64 bytes
//     of top bits. Nibble chunk c holds w[4c + i] (low) and w[16 + 4c + i] (high) as in Q4_0x16; byte i of lane r
//     in top-bit vector h has, at bits 2c..2c+1, the top two bits of w[16h + 4c + i]. The stored 6-bit value is
//     ggml's, biased by 32.
//   Q4_Kx16 group-block (2304 bytes, one 256-value super-block of 16 rows):
//     d[16] fp16 | dmin[16] fp16 | 3 x 64 bytes of scale words (lane r of word vector w: bytes 4w..4w+3 of row r's
//     12 packed 6-bit scales and mins, as ggml stores them) | per 32-value sub-block j: 4 x 64 bytes of nibbles as in
//     Q4_0x16 (chunk c: low nibble w[32j + 4c + i], high nibble w[32j + 16 + 4c + i]).
//   Q5_Kx16 group-block (2816 bytes): as Q4_Kx16, with 64 bytes of fifth bits after each sub-block's nibbles: bit k
//     of byte i of lane r is the fifth bit of the value in nibble chunk k (k < 4: low nibbles of chunk k, k >= 4:
//     high nibbles of chunk k - 4), byte i.
//
// so one 64-byte load holds 4 consecutive weights of 16 rows, and a dot-product instruction with 4 activation
// bytes broadcast produces 16 row sums at once. Rows past the end of the matrix are zero. The bytes per weight
// equal the ggml format's, so decode reads no more memory than the original file, except for Q5_0, which is widened
// to Q8_0x16 without rounding (8.5 bits per weight instead of 5.5).
#pragma once

#include <cstdint>
#include <memory>

#include "tensor/matrix_view.h"

namespace tern {
class ThreadPool;
}

namespace tern::kernels {

enum class WeightLayout { kRowMajor, kQ4_0x16, kQ8_0x16, kQ6_Kx16, kQ4_Kx16, kQ5_Kx16 };

constexpr int64_t kPackRows = 16;
constexpr int64_t kQ4_0x16BlockBytes = 32 + 256;
constexpr int64_t kQ8_0x16BlockBytes = 32 + 512;
constexpr int64_t kQ6_Kx16BlockBytes = 32 + 256 + 8 * (256 + 128);  // 16 x sizeof(BlockQ6_K)
constexpr int64_t kQ6_Kx16ScalesOffset = 32;
constexpr int64_t kQ6_Kx16QuantsOffset = 32 + 256;
constexpr int64_t kQ6_Kx16BytesPer32 = 256 + 128;  // nibbles and top bits of one 32-value block
constexpr int64_t kQ4_Kx16BlockBytes = 32 + 32 + 192 + 8 * 256;  // 16 x sizeof(BlockQ4_K)
constexpr int64_t kQ4_Kx16MinScalesOffset = 32;
constexpr int64_t kQ4_Kx16ScaleWordsOffset = 64;
constexpr int64_t kQ4_Kx16QuantsOffset = 64 + 192;  // also Q5_Kx16's
constexpr int64_t kQ4_Kx16BytesPerSubBlock = 256;
constexpr int64_t kQ5_Kx16BytesPerSubBlock = 256 + 64;
constexpr int64_t kQ5_Kx16BlockBytes = kQ4_Kx16QuantsOffset + 8 * kQ5_Kx16BytesPerSubBlock;  // 16 x sizeof(BlockQ5_K)

const char* weight_layout_name(WeightLayout layout);

struct PackedWeights {
    MatrixView view;  // the original ggml matrix, always valid
    WeightLayout layout = WeightLayout::kRowMajor;
    int64_t num_groups = 0;   // groups of kPackRows rows (packed layouts)
    int64_t group_bytes = 0;  // bytes of one group: all of its blocks
    std::shared_ptr<uint8_t> data;  // 64-byte aligned packed bytes (packed layouts)

    const uint8_t* group(int64_t group_idx) const { return data.get() + group_idx * group_bytes; }
    // Matmul work is split in units: row groups for packed layouts, rows otherwise.
    int64_t num_work_units() const { return layout == WeightLayout::kRowMajor ? view.num_rows : num_groups; }
    int64_t rows_per_unit() const { return layout == WeightLayout::kRowMajor ? 1 : kPackRows; }
};

// The layout pack_weights gives a matrix of `type` (row-major when it is not repacked).
WeightLayout packed_layout_for(DType type);

// The bytes pack_weights(view, enable) holds (0: the view stays row-major), rounded up to a multiple of 64.
int64_t packed_bytes(const MatrixView& view, bool enable = true);

// Repacks Q4_0, Q8_0, Q5_0 (as Q8_0x16), Q4_K, Q5_K and Q6_K matrices; any other type (or `enable` false) keeps the
// row-major view. Into `destination` when given (packed_bytes(view) bytes, 64-byte aligned: the weight loader's
// HugePageArena puts matrices under 2 MiB on huge pages), else into an allocation of its own. With a pool, its
// threads pack row groups side by side (the bytes are the same).
PackedWeights pack_weights(const MatrixView& view, bool enable = true,
                           std::shared_ptr<uint8_t> destination = nullptr, ThreadPool* pool = nullptr);

}  // namespace tern::kernels
