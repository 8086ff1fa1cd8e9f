// AVX2 matmuls of the repacked K-quants (Q4_Kx16, Q5_Kx16, Q6_Kx16: kernels/packed_weights.h), for x86 CPUs
// without AVX-512 VNNI, half a 16-row group (8 rows) per 256-bit register. Same arithmetic as the AVX-512 kernels:
// integer sums per sub-block from vpmaddubsw / vpmaddwd, then the scales in float.
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/x86/avx2/packed_tile_avx2.h"

namespace tern::kernels::avx2 {
namespace {

// Q6_Kx16 (kernels/packed_weights.h), rows 8h..8h+7 of a group: the stored 6-bit values (0..63) go into vpmaddubsw
// as they are (63 * 127 * 2 fits 16 bits); each 16-value sub-block's sum starts at -32 * sum(a), as in the AVX-512
// kernel, and the two sub-blocks of a 32-value block are scaled by sc * d, then by the block's d_a.
template <int kHalf>
inline __m256i q6_k_sub_block_dot(const uint8_t* block32, int half_rows, const int8_t* q, int32_t bias) {
    const __m256i bits_4_5 = _mm256_set1_epi8(0x30);
    const __m256i top_bits =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block32 + 256 + kHalf * 64 + half_rows * 32));
    __m256i total = _mm256_set1_epi32(bias);
    for (int chunk = 0; chunk < 4; ++chunk) {
        const __m256i low = nibble_chunk(block32, half_rows, chunk + 4 * kHalf);
        // Bits 2c..2c+1 to bits 4..5 (a 16-bit shift by 4 - 2c; the mask drops what crosses from the neighbour).
        const __m128i shift = _mm_cvtsi32_si128(4 - 2 * chunk >= 0 ? 4 - 2 * chunk : 0);
        const __m256i top = 4 - 2 * chunk >= 0 ? _mm256_sll_epi16(top_bits, shift) : _mm256_srli_epi16(top_bits, 2);
        const __m256i values = _mm256_or_si256(low, _mm256_and_si256(top, bits_4_5));
        total = _mm256_add_epi32(total, pair_sums(values, broadcast_4_bytes(q + 16 * kHalf + 4 * chunk)));
    }
    return total;
}

// One token's 8 row sums over the whole row.
__m256 q6_kx16_rows(const uint8_t* group, int64_t num_super_blocks, int half_rows, const int8_t* q,
                    const float* activation_scale, const int32_t* bias) {
    __m256 total = _mm256_setzero_ps();
    for (int64_t super_idx = 0; super_idx < num_super_blocks; ++super_idx) {
        const uint8_t* super_block = group + super_idx * kQ6_Kx16BlockBytes;
        const __m256 d =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super_block + half_rows * 16)));
        for (int block32 = 0; block32 < 8; ++block32) {
            const uint8_t* quants = super_block + kQ6_Kx16QuantsOffset + block32 * kQ6_Kx16BytesPer32;
            const int64_t element = super_idx * 256 + block32 * 32;
            __m256 sub_scales[2];
            for (int half = 0; half < 2; ++half) {
                const uint8_t* scales = super_block + kQ6_Kx16ScalesOffset + (2 * block32 + half) * 16 + half_rows * 8;
                const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales));
                sub_scales[half] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), d);
            }
            const __m256i dot_low = q6_k_sub_block_dot<0>(quants, half_rows, q + element, bias[element / 16]);
            const __m256i dot_high = q6_k_sub_block_dot<1>(quants, half_rows, q + element, bias[element / 16 + 1]);
            const __m256 part = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_high), sub_scales[1],
                                                _mm256_mul_ps(_mm256_cvtepi32_ps(dot_low), sub_scales[0]));
            total = _mm256_fmadd_ps(part, _mm256_set1_ps(activation_scale[element / 32]), total);
        }
    }
    return total;
}

}  // namespace

void matmul_q6_kx16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    const std::vector<int32_t>& bias = q6_k_sub_block_biases(activations);
    const int64_t per_token = activations.length / 16;
    const int64_t num_super_blocks = weights.view.row_length / 256;
    for_each_half_group(weights, activations.num_tokens, group_begin, group_end, y, y_stride,
                        [&](int64_t group_idx, int half_rows, int64_t token_idx) {
        return q6_kx16_rows(weights.group(group_idx), num_super_blocks, half_rows,
                            activations.q8.data() + token_idx * activations.length,
                            activations.scale.data() + token_idx * activations.num_blocks(),
                            bias.data() + token_idx * per_token);
    });
}

namespace {

// d * sc_j and dmin * m_j of one Q4_K / Q5_K super-block for rows 8h..8h+7 (the word shuffles of quant/blocks.h's
// unpack_scale_min_k4, on 8 rows at once).
void k_quant_scales(const uint8_t* super_block, int half_rows, __m256* scales, __m256* mins) {
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super_block + half_rows * 16)));
    const __m256 dmin = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(super_block + kQ4_Kx16MinScalesOffset + half_rows * 16)));
    const uint8_t* words = super_block + kQ4_Kx16ScaleWordsOffset + half_rows * 32;
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 64));
    const __m256i w2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 128));
    const __m256i low6 = _mm256_set1_epi32(0x3f3f3f3f), low4 = _mm256_set1_epi32(0x0f0f0f0f);
    const __m256i low2 = _mm256_set1_epi32(0x03030303);
    const __m256i packed[4] = {
        _mm256_and_si256(w0, low6),
        _mm256_or_si256(_mm256_and_si256(w2, low4),
                        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w0, 6), low2), 4)),
        _mm256_and_si256(w1, low6),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, 4), low4),
                        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w1, 6), low2), 4))};
    const __m128i byte_count[4] = {_mm_cvtsi32_si128(0), _mm_cvtsi32_si128(8), _mm_cvtsi32_si128(16),
                                   _mm_cvtsi32_si128(24)};
    for (int byte = 0; byte < 4; ++byte) {
        const auto value = [&](int which) {
            return _mm256_cvtepi32_ps(
                _mm256_and_si256(_mm256_srl_epi32(packed[which], byte_count[byte]), _mm256_set1_epi32(0xFF)));
        };
        scales[byte] = _mm256_mul_ps(value(0), d);
        scales[byte + 4] = _mm256_mul_ps(value(1), d);
        mins[byte] = _mm256_mul_ps(value(2), dmin);
        mins[byte + 4] = _mm256_mul_ps(value(3), dmin);
    }
}

// The integer sum of one 32-value sub-block for rows 8h..8h+7; with kFifthBit, Q5_Kx16's fifth bits join the
// nibbles (bit k of each byte of the fifth-bit vector belongs to nibble chunk k).
template <bool kFifthBit>
__m256i k_quant_sub_block_dot(const uint8_t* sub_block, int half_rows, const int8_t* q) {
    const __m256i bit_4 = _mm256_set1_epi8(0x10);
    __m256i fifth_bits = _mm256_setzero_si256();
    if constexpr (kFifthBit) {
        fifth_bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub_block + 256 + half_rows * 32));
    }
    __m256i total = _mm256_setzero_si256();
    for (int k = 0; k < 8; ++k) {
        __m256i values = nibble_chunk(sub_block, half_rows, k);
        if constexpr (kFifthBit) {
            const __m256i moved = k < 4 ? _mm256_sll_epi16(fifth_bits, _mm_cvtsi32_si128(4 - k))
                                        : _mm256_srl_epi16(fifth_bits, _mm_cvtsi32_si128(k - 4));
            values = _mm256_or_si256(values, _mm256_and_si256(moved, bit_4));
        }
        total = _mm256_add_epi32(total, pair_sums(values, broadcast_4_bytes(q + 4 * k)));
    }
    return total;
}

template <bool kFifthBit>
void matmul_k_quant_x16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                        int64_t group_end, float* y, int64_t y_stride) {
    constexpr int64_t kBlockBytes = kFifthBit ? kQ5_Kx16BlockBytes : kQ4_Kx16BlockBytes;
    constexpr int64_t kSubBlockBytes = kFifthBit ? kQ5_Kx16BytesPerSubBlock : kQ4_Kx16BytesPerSubBlock;
    const int64_t num_super_blocks = weights.view.row_length / 256;
    for_each_half_group(weights, activations.num_tokens, group_begin, group_end, y, y_stride,
                        [&](int64_t group_idx, int half_rows, int64_t token_idx) {
        const int8_t* q8 = activations.q8.data() + token_idx * activations.length;
        const int64_t first_block = token_idx * activations.num_blocks();
        __m256 total = _mm256_setzero_ps();
        for (int64_t super_idx = 0; super_idx < num_super_blocks; ++super_idx) {
            const uint8_t* super_block = weights.group(group_idx) + super_idx * kBlockBytes;
            __m256 scales[8], mins[8];
            k_quant_scales(super_block, half_rows, scales, mins);
            for (int sub_block = 0; sub_block < 8; ++sub_block) {
                const int64_t act_block = super_idx * 8 + sub_block;
                const __m256i dot = k_quant_sub_block_dot<kFifthBit>(
                    super_block + kQ4_Kx16QuantsOffset + sub_block * kSubBlockBytes, half_rows, q8 + act_block * 32);
                const __m256 term = _mm256_mul_ps(_mm256_cvtepi32_ps(dot),
                                                  _mm256_set1_ps(activations.scale[first_block + act_block]));
                total = _mm256_fmadd_ps(scales[sub_block], term, total);
                total = _mm256_fnmadd_ps(mins[sub_block], _mm256_set1_ps(activations.sum[first_block + act_block]),
                                         total);
            }
        }
        return total;
    });
}

}  // namespace

void matmul_q4_kx16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    matmul_k_quant_x16<false>(weights, activations, group_begin, group_end, y, y_stride);
}

void matmul_q5_kx16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    matmul_k_quant_x16<true>(weights, activations, group_begin, group_end, y, y_stride);
}

}  // namespace tern::kernels::avx2
