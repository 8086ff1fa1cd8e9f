// AVX-512 VNNI matmul of row-major Q6_K weights (ggml's layout, not repacked) with 8-bit activations.
// Per 128-value half of a 256-value block, one 64-byte load of ql and a 32-byte load of qh rebuild two vectors
// of 64 unsigned 6-bit values; vpdpbusd against the activations gives 4-value sums per lane, a second vpdpbusd
// with 32s removes the -32 offset, and each lane is scaled by its 16-value sub-block scale and its 32-value
// activation block scale.
#include <immintrin.h>

#include <cstring>

#include "kernels/kernels.h"
#include "kernels/x86/avx512/row_tiles.h"
#include "quant/blocks.h"

namespace tern::kernels::avx512 {
namespace {

// Lanes 4m..4m+3 get sub-block scale m of the 4 given (int8 -> int32).
inline __m512i expand_scales(const int8_t* scales) {
    int32_t four;
    std::memcpy(&four, scales, 4);
    const __m128i bytes = _mm_cvtsi32_si128(four);
    const __m128i repeated = _mm_shuffle_epi8(bytes, _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
    return _mm512_cvtepi8_epi32(repeated);
}

// Lanes 0-7 get scale[0], lanes 8-15 scale[1].
inline __m512 expand_activation_scales(const float* scale) {
    const __m512d low = _mm512_castps_pd(_mm512_set1_ps(scale[0]));
    return _mm512_castpd_ps(_mm512_insertf64x4(low, _mm256_castps_pd(_mm256_set1_ps(scale[1])), 1));
}

// One 256-value block rebuilt as four vectors of 64 unsigned 6-bit values (value = q - 32), in element order.
inline void unpack_block(const BlockQ6_K& block, __m512i* values) {
    const __m512i low_nibble = _mm512_set1_epi8(0x0F);
    const __m512i two_bits = _mm512_set1_epi8(0x03);
    for (int half = 0; half < 2; ++half) {
        const __m512i ql = _mm512_loadu_si512(block.ql + 64 * half);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qh + 32 * half));
        const __m512i qh_wide = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
        const __m512i high_first = _mm512_and_si512(qh_wide, two_bits);                         // bits 0-1, 2-3
        const __m512i high_second = _mm512_and_si512(_mm512_srli_epi16(qh_wide, 4), two_bits);  // bits 4-5, 6-7
        values[2 * half] = _mm512_or_si512(_mm512_and_si512(ql, low_nibble), _mm512_slli_epi16(high_first, 4));
        values[2 * half + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low_nibble),
                                               _mm512_slli_epi16(high_second, 4));
    }
}

// Adds d * sum over the block of sub-block-scaled dot products, each lane scaled by its activation block scale.
inline __m512 block_dot(const __m512i* values, const __m512* sub_scales, __m512 d, const int8_t* q,
                        const float* activation_scale, __m512 total) {
    const __m512i thirty_two = _mm512_set1_epi8(32);
    __m512 block_total = _mm512_setzero_ps();
    for (int part = 0; part < 4; ++part) {
        const __m512i activations = _mm512_loadu_si512(q + 64 * part);
        const __m512i dot = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), values[part], activations),
                                             _mm512_dpbusd_epi32(_mm512_setzero_si512(), thirty_two, activations));
        const __m512 lane_scale = _mm512_mul_ps(sub_scales[part], expand_activation_scales(activation_scale + 2 * part));
        block_total = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), lane_scale, block_total);
    }
    return _mm512_fmadd_ps(d, block_total, total);
}

template <int kTile>
void row_tile(const BlockQ6_K* blocks, int64_t num_blocks, const Activations& activations, int64_t first_token,
              float* y, int64_t y_stride, int64_t row_idx) {
    __m512 totals[kTile];
    for (int tile_idx = 0; tile_idx < kTile; ++tile_idx) totals[tile_idx] = _mm512_setzero_ps();
    for (int64_t block_idx = 0; block_idx < num_blocks; ++block_idx) {
        const BlockQ6_K& block = blocks[block_idx];
        __m512i values[4];
        unpack_block(block, values);
        __m512 sub_scales[4];
        for (int part = 0; part < 4; ++part) sub_scales[part] = _mm512_cvtepi32_ps(expand_scales(block.scales + 4 * part));
        uint16_t d_bits;
        std::memcpy(&d_bits, &block.d, 2);
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(d_bits));
        for (int tile_idx = 0; tile_idx < kTile; ++tile_idx) {
            const int64_t token_idx = first_token + tile_idx;
            totals[tile_idx] = block_dot(values, sub_scales, d, activations.q8.data() + token_idx * activations.length +
                                         256 * block_idx, activations.scale.data() + token_idx * activations.num_blocks() +
                                         8 * block_idx, totals[tile_idx]);
        }
    }
    for (int tile_idx = 0; tile_idx < kTile; ++tile_idx) {
        y[(first_token + tile_idx) * y_stride + row_idx] = _mm512_reduce_add_ps(totals[tile_idx]);
    }
}

}  // namespace

void matmul_q6_k(const MatrixView& weights, const Activations& activations, int64_t row_begin, int64_t row_end,
                 float* y, int64_t y_stride) {
    const int64_t num_blocks = weights.row_length / 256;
    for_each_row_tile<4>(row_begin, row_end, activations.num_tokens, [&](int64_t row, int64_t token, auto count) {
        const BlockQ6_K* blocks = reinterpret_cast<const BlockQ6_K*>(weights.row(row));
        row_tile<decltype(count)::value>(blocks, num_blocks, activations, token, y, y_stride, row);
    });
}

}  // namespace tern::kernels::avx512
