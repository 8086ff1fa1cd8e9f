// Pieces shared by the AVX-512 micro-kernels over 16-row interleaved weights (kernels/packed_weights.h).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/packed_weights.h"

namespace tern::kernels::avx512 {

// Four activation bytes in every 32-bit lane: the operand vpdpbusd multiplies each weight lane's 4 bytes by.
inline __m512i broadcast_4_bytes(const int8_t* source) {
    int32_t value;
    std::memcpy(&value, source, 4);
    return _mm512_set1_epi32(value);
}

// y[token][16 rows of the group], without the rows past the matrix's end.
inline void store_group_rows(const PackedWeights& weights, float* y, int64_t y_stride, int64_t group_idx,
                             int64_t token, __m512 values) {
    const int64_t first_row = group_idx * kPackRows, num_valid = weights.view.num_rows - first_row;
    float* destination = y + token * y_stride + first_row;
    if (num_valid >= 16) {
        _mm512_storeu_ps(destination, values);
    } else {
        _mm512_mask_storeu_ps(destination, static_cast<__mmask16>((1u << num_valid) - 1), values);
    }
}

}  // namespace tern::kernels::avx512
