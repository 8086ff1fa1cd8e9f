// Quantized block layouts, byte for byte as ggml defines them (ggml-common.h), so tensors read from or written to
// GGUF files are interchangeable with llama.cpp and Ollama. Scales are raw IEEE half bits (see base/fp16.h).
//
// Element order inside a block:
// - Q4_0/Q4_1/Q5_0/Q5_1: byte qs[j] holds element j in its low nibble and element j + 16 in its high nibble; for
//   the 5-bit types bit j of qh (read as a little-endian uint32) is the fifth bit of element j.
// - Q8_0: qs[j] is element j.
// - Q4_K/Q5_K: eight sub-blocks of 32 with a 6-bit scale and a 6-bit min each (see unpack_scale_min_k4). Each run
//   of 64 elements uses 32 bytes of qs: the low nibbles are the first 32 elements, the high nibbles the next 32.
//   For Q5_K, qh[l] bit 2c is the fifth bit of element 64c + l and bit 2c + 1 that of element 64c + 32 + l.
// - Q6_K: sixteen sub-blocks of 16, sub-block s scaled by scales[s]. In each half of 128 elements, element 32g + l
//   takes its low four bits from ql[l + 32 * (g & 1)] (low nibble for g < 2, high nibble otherwise) and its top two
//   bits from bits 2g..2g+1 of qh[l]; the stored value is biased by 32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace tern {

inline constexpr int kQK = 32;          // elements per block of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0
inline constexpr int kQK_K = 256;       // elements per super-block of the K types
inline constexpr int kKScaleSize = 12;  // bytes of packed 6-bit scales and mins in Q4_K and Q5_K

struct BlockQ4_0 {
    uint16_t d;            // scale (half)
    uint8_t qs[kQK / 2];   // 4-bit quants, biased by 8
};

struct BlockQ4_1 {
    uint16_t d;            // scale (half)
    uint16_t m;            // min (half)
    uint8_t qs[kQK / 2];   // 4-bit quants
};

struct BlockQ5_0 {
    uint16_t d;            // scale (half)
    uint8_t qh[4];         // fifth bits, little-endian uint32
    uint8_t qs[kQK / 2];   // low 4 bits, biased by 16 together with qh
};

struct BlockQ5_1 {
    uint16_t d;            // scale (half)
    uint16_t m;            // min (half)
    uint8_t qh[4];         // fifth bits, little-endian uint32
    uint8_t qs[kQK / 2];   // low 4 bits
};

struct BlockQ8_0 {
    uint16_t d;            // scale (half)
    int8_t qs[kQK];        // 8-bit quants
};

struct BlockQ4_K {
    uint16_t d;                     // scale of the 6-bit sub-block scales (half)
    uint16_t dmin;                  // scale of the 6-bit sub-block mins (half)
    uint8_t scales[kKScaleSize];    // packed 6-bit scales and mins
    uint8_t qs[kQK_K / 2];          // 4-bit quants
};

struct BlockQ5_K {
    uint16_t d;                     // scale of the 6-bit sub-block scales (half)
    uint16_t dmin;                  // scale of the 6-bit sub-block mins (half)
    uint8_t scales[kKScaleSize];    // packed 6-bit scales and mins
    uint8_t qh[kQK_K / 8];          // fifth bits
    uint8_t qs[kQK_K / 2];          // low 4 bits
};

struct BlockQ6_K {
    uint8_t ql[kQK_K / 2];     // low 4 bits
    uint8_t qh[kQK_K / 4];     // high 2 bits
    int8_t scales[kQK_K / 16];  // 8-bit sub-block scales
    uint16_t d;                // super-block scale (half)
};

// The sizes are part of the file format; a mismatch here would silently corrupt every tensor.
static_assert(sizeof(BlockQ4_0) == 18 && offsetof(BlockQ4_0, qs) == 2);
static_assert(sizeof(BlockQ4_1) == 20 && offsetof(BlockQ4_1, qs) == 4);
static_assert(sizeof(BlockQ5_0) == 22 && offsetof(BlockQ5_0, qh) == 2 && offsetof(BlockQ5_0, qs) == 6);
static_assert(sizeof(BlockQ5_1) == 24 && offsetof(BlockQ5_1, qh) == 4 && offsetof(BlockQ5_1, qs) == 8);
static_assert(sizeof(BlockQ8_0) == 34 && offsetof(BlockQ8_0, qs) == 2);
static_assert(sizeof(BlockQ4_K) == 144 && offsetof(BlockQ4_K, scales) == 4 && offsetof(BlockQ4_K, qs) == 16);
static_assert(sizeof(BlockQ5_K) == 176 && offsetof(BlockQ5_K, qh) == 16 && offsetof(BlockQ5_K, qs) == 48);
static_assert(sizeof(BlockQ6_K) == 210 && offsetof(BlockQ6_K, qh) == 128 && offsetof(BlockQ6_K, scales) == 192 &&
              offsetof(BlockQ6_K, d) == 208);

// The block struct of each quantized DType, for code that is generic over types. dtype_traits() is not constexpr,
// so tests check that these agree with its block_size and block_bytes.
template <DType kType>
struct BlockOf;
template <> struct BlockOf<DType::kQ4_0> { using Type = BlockQ4_0; static constexpr int kElements = kQK; };
template <> struct BlockOf<DType::kQ4_1> { using Type = BlockQ4_1; static constexpr int kElements = kQK; };
template <> struct BlockOf<DType::kQ5_0> { using Type = BlockQ5_0; static constexpr int kElements = kQK; };
template <> struct BlockOf<DType::kQ5_1> { using Type = BlockQ5_1; static constexpr int kElements = kQK; };
template <> struct BlockOf<DType::kQ8_0> { using Type = BlockQ8_0; static constexpr int kElements = kQK; };
template <> struct BlockOf<DType::kQ4_K> { using Type = BlockQ4_K; static constexpr int kElements = kQK_K; };
template <> struct BlockOf<DType::kQ5_K> { using Type = BlockQ5_K; static constexpr int kElements = kQK_K; };
template <> struct BlockOf<DType::kQ6_K> { using Type = BlockQ6_K; static constexpr int kElements = kQK_K; };

// Q4_K/Q5_K scale packing: sub-blocks 0..3 keep their 6-bit scale and min in the low six bits of bytes j and j + 4;
// sub-blocks 4..7 keep their low four bits as the nibbles of byte j + 4 (scale low, min high) and their top two
// bits in the spare top bits of bytes j - 4 (scale) and j (min).
inline void unpack_scale_min_k4(int sub_block, const uint8_t* packed, uint8_t* scale, uint8_t* min) {
    const int j = sub_block;
    if (j < 4) {
        *scale = packed[j] & 63;
        *min = packed[j + 4] & 63;
    } else {
        *scale = static_cast<uint8_t>((packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4));
        *min = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
    }
}

// Inverse of unpack_scale_min_k4 for 6-bit values; sub-blocks must be stored in order 0..7 into zeroed bytes.
inline void pack_scale_min_k4(int sub_block, uint8_t scale, uint8_t min, uint8_t* packed) {
    const int j = sub_block;
    if (j < 4) {
        packed[j] = scale;
        packed[j + 4] = min;
    } else {
        packed[j + 4] = static_cast<uint8_t>((scale & 0x0f) | ((min & 0x0f) << 4));
        packed[j - 4] |= static_cast<uint8_t>((scale >> 4) << 6);
        packed[j] |= static_cast<uint8_t>((min >> 4) << 6);
    }
}

}  // namespace tern
