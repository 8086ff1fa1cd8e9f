// Pieces shared by the AVX2 kernels over 16-row interleaved weights (kernels/packed_weights.h): they work on half
// a group at a time, 8 rows per 256-bit register.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/packed_weights.h"

namespace tern::kernels::avx2 {

inline __m256i broadcast_4_bytes(const int8_t* source) {
    int32_t value;
    std::memcpy(&value, source, 4);
    return _mm256_set1_epi32(value);
}

// 32-bit sums of 4 unsigned x signed byte products per lane (vpmaddubsw's 16-bit pairs must not overflow: weights
// up to 63 with activations up to 127 are safe).
inline __m256i pair_sums(__m256i unsigned_bytes, __m256i signed_bytes) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(unsigned_bytes, signed_bytes), _mm256_set1_epi16(1));
}

// Values 4k..4k+3 (k < 4) or 16 + 4(k - 4).. of rows 8h..8h+7 of a 32-value block in the Q4_0x16 nibble layout:
// nibble vector k % 4, low or high nibbles.
inline __m256i nibble_chunk(const uint8_t* nibbles, int half_rows, int k) {
    const __m256i low_nibble = _mm256_set1_epi8(0x0F);
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(nibbles + (k % 4) * 64 + half_rows * 32));
    return k < 4 ? _mm256_and_si256(raw, low_nibble) : _mm256_and_si256(_mm256_srli_epi16(raw, 4), low_nibble);
}

// Calls rows(group_idx, half, token_idx) -> 8 row sums for rows 8 * half.. of each group and token, and stores them
// without the rows past the matrix's end.
template <typename RowsFn>
void for_each_half_group(const PackedWeights& weights, int64_t num_tokens, int64_t group_begin, int64_t group_end,
                         float* y, int64_t y_stride, const RowsFn& rows) {
    for (int64_t group_idx = group_begin; group_idx < group_end; ++group_idx) {
        for (int half = 0; half < 2; ++half) {
            const int64_t first_row = group_idx * kPackRows + half * 8;
            const int64_t num_valid = weights.view.num_rows - first_row;
            if (num_valid <= 0) break;
            for (int64_t token_idx = 0; token_idx < num_tokens; ++token_idx) {
                float values[8];
                _mm256_storeu_ps(values, rows(group_idx, half, token_idx));
                const int64_t count = num_valid < 8 ? num_valid : 8;
                std::memcpy(y + token_idx * y_stride + first_row, values, static_cast<size_t>(count) * sizeof(float));
            }
        }
    }
}

}  // namespace tern::kernels::avx2
