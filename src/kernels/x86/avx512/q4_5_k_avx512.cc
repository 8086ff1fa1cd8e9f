// AVX-512 VNNI matmuls of row-major Q4_K and Q5_K weights (ggml's layouts, not repacked) with 8-bit activations.
// Q5_K is Q4_K with a fifth bit per value from qh (bit 2c of qh[l] for value l of sub-block 2c, bit 2c + 1 for
// sub-block 2c + 1).
// A 256-value block is eight 32-value sub-blocks, w = d * sc_j * q - dmin * m_j, and the activation blocks are 32
// values too, so each sub-block meets one activation block a = d_a * q_a:
//   sum_i w_i a_i = (d * sc_j * d_a) * sum_i q_i q_a,i - (dmin * m_j) * (d_a * sum_i q_a,i)
// The second term uses the activation's precomputed block sum. Per 64 values (32 bytes of qs: low nibbles are
// sub-block 2c, high nibbles 2c + 1) one vpdpbusd gives 16 lanes, 0-7 of sub-block 2c and 8-15 of 2c + 1, each
// scaled by its sub-block's d * sc_j * d_a.
#include <immintrin.h>

#include <cstring>

#include "kernels/kernels.h"
#include "kernels/x86/avx512/row_tiles.h"
#include "quant/blocks.h"

namespace tern::kernels::avx512 {
namespace {

// A block's four 64-value chunks as unsigned bytes in element order, and its sub-block scales and mins as floats.
struct UnpackedBlock {
    __m512i values[4];
    __m256 scales;  // d * sc_j, j = 0..7
    __m256 mins;    // dmin * m_j
};

// The sub-block scales and mins of a Q4_K or Q5_K block (same header) as floats. The 12 packed bytes hold eight
// 6-bit scales and eight 6-bit mins (quant/blocks.h, unpack_scale_min_k4); the 32-bit shuffles below put the scales
// in bytes 0-7 and the mins in bytes 8-15, as ggml's SIMD paths do, and the values equal the scalar unpacking's.
template <typename Block>
inline void unpack_scales(const Block& block, UnpackedBlock* out) {
    constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
    uint32_t words[4];
    std::memcpy(words, block.scales, 12);
    words[3] = ((words[2] >> 4) & kLow4) | (((words[1] >> 6) & kLow2) << 4);
    const uint32_t mins_low = words[1] & kLow6;
    words[1] = (words[2] & kLow4) | (((words[0] >> 6) & kLow2) << 4);
    words[2] = mins_low;
    words[0] &= kLow6;
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words));
    const float d = _cvtsh_ss(block.d), dmin = _cvtsh_ss(block.dmin);
    out->scales = _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)));
    out->mins = _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8))));
}

inline void unpack_block(const BlockQ4_K& block, UnpackedBlock* out) {
    const __m256i low_nibble = _mm256_set1_epi8(0x0F);
    for (int chunk = 0; chunk < 4; ++chunk) {
        const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs + 32 * chunk));
        const __m256i low = _mm256_and_si256(packed, low_nibble);
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low_nibble);
        out->values[chunk] = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    }
    unpack_scales(block, out);
}

inline void unpack_block(const BlockQ5_K& block, UnpackedBlock* out) {
    const __m256i low_nibble = _mm256_set1_epi8(0x0F);
    const __m256i one = _mm256_set1_epi8(0x01);
    const __m256i fifth_bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qh));
    for (int chunk = 0; chunk < 4; ++chunk) {
        const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs + 32 * chunk));
        // 16-bit shifts carry bits in from the next byte; the mask keeps only the byte's own bit.
        const __m256i low_fifth =
            _mm256_and_si256(_mm256_srl_epi16(fifth_bits, _mm_cvtsi32_si128(2 * chunk)), one);
        const __m256i high_fifth =
            _mm256_and_si256(_mm256_srl_epi16(fifth_bits, _mm_cvtsi32_si128(2 * chunk + 1)), one);
        const __m256i low = _mm256_or_si256(_mm256_and_si256(packed, low_nibble), _mm256_slli_epi16(low_fifth, 4));
        const __m256i high = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(packed, 4), low_nibble),
                                             _mm256_slli_epi16(high_fifth, 4));
        out->values[chunk] = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    }
    unpack_scales(block, out);
}

// Lanes 0-7 get v[2c], lanes 8-15 v[2c + 1].
inline __m512 pair_lanes(__m512 v, int chunk) {
    const __m512i index = _mm512_set_epi32(2 * chunk + 1, 2 * chunk + 1, 2 * chunk + 1, 2 * chunk + 1, 2 * chunk + 1,
                                           2 * chunk + 1, 2 * chunk + 1, 2 * chunk + 1, 2 * chunk, 2 * chunk, 2 * chunk,
                                           2 * chunk, 2 * chunk, 2 * chunk, 2 * chunk, 2 * chunk);
    return _mm512_permutexvar_ps(index, v);
}

// Adds one block's dot products with one token to `total` (16 lanes) and its min terms to `min_total` (8 lanes).
inline void block_dot(const UnpackedBlock& block, const int8_t* q, const float* activation_scale,
                      const float* activation_sum, __m512* total, __m256* min_total) {
    const __m256 lane_scales = _mm256_mul_ps(block.scales, _mm256_loadu_ps(activation_scale));
    const __m512 wide_scales = _mm512_castps256_ps512(lane_scales);
    for (int chunk = 0; chunk < 4; ++chunk) {
        const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), block.values[chunk],
                                                _mm512_loadu_si512(q + 64 * chunk));
        *total = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), pair_lanes(wide_scales, chunk), *total);
    }
    *min_total = _mm256_fmadd_ps(block.mins, _mm256_loadu_ps(activation_sum), *min_total);
}

inline float horizontal_sum(__m256 v) {
    const __m128 sum = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 pairs = _mm_add_ps(sum, _mm_movehl_ps(sum, sum));
    return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}

template <typename Block, int kTile>
void row_tile(const Block* blocks, int64_t num_blocks, const Activations& activations, int64_t first_token,
              float* y, int64_t y_stride, int64_t row_idx) {
    __m512 totals[kTile];
    __m256 min_totals[kTile];
    for (int tile_idx = 0; tile_idx < kTile; ++tile_idx) {
        totals[tile_idx] = _mm512_setzero_ps();
        min_totals[tile_idx] = _mm256_setzero_ps();
    }
    const int64_t act_blocks = activations.num_blocks();
    for (int64_t block_idx = 0; block_idx < num_blocks; ++block_idx) {
        UnpackedBlock block;
        unpack_block(blocks[block_idx], &block);
        for (int tile_idx = 0; tile_idx < kTile; ++tile_idx) {
            const int64_t token_idx = first_token + tile_idx;
            const int64_t first_act_block = token_idx * act_blocks + 8 * block_idx;
            block_dot(block, activations.q8.data() + token_idx * activations.length + 256 * block_idx,
                      activations.scale.data() + first_act_block, activations.sum.data() + first_act_block,
                      &totals[tile_idx], &min_totals[tile_idx]);
        }
    }
    for (int tile_idx = 0; tile_idx < kTile; ++tile_idx) {
        y[(first_token + tile_idx) * y_stride + row_idx] =
            _mm512_reduce_add_ps(totals[tile_idx]) - horizontal_sum(min_totals[tile_idx]);
    }
}

template <typename Block>
void matmul_k(const MatrixView& weights, const Activations& activations, int64_t row_begin, int64_t row_end, float* y,
              int64_t y_stride) {
    const int64_t num_blocks = weights.row_length / 256;
    for_each_row_tile<4>(row_begin, row_end, activations.num_tokens, [&](int64_t row, int64_t token, auto count) {
        const Block* blocks = reinterpret_cast<const Block*>(weights.row(row));
        row_tile<Block, decltype(count)::value>(blocks, num_blocks, activations, token, y, y_stride, row);
    });
}

}  // namespace

void matmul_q4_k(const MatrixView& weights, const Activations& activations, int64_t row_begin, int64_t row_end,
                 float* y, int64_t y_stride) {
    matmul_k<BlockQ4_K>(weights, activations, row_begin, row_end, y, y_stride);
}

void matmul_q5_k(const MatrixView& weights, const Activations& activations, int64_t row_begin, int64_t row_end,
                 float* y, int64_t y_stride) {
    matmul_k<BlockQ5_K>(weights, activations, row_begin, row_end, y, y_stride);
}

}  // namespace tern::kernels::avx512
