// AVX2 + FMA + F16C kernels, for x86 CPUs without AVX-512 VNNI. Compiled alone with those flags.
//
// Packed int8 matmul works on half a 16-row group at a time (8 rows per 256-bit register): vpmaddubsw multiplies
// unsigned weight bytes by signed activation bytes into 16-bit pair sums, vpmaddwd folds them into 32-bit row
// sums. q4_0 nibbles (0..15) go in as they are; q8_0's stored w + 128 would overflow the 16-bit pairs, so those
// bytes are turned back into signed weights and multiplied with the sign trick |a| * sign(w, a).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/x86/avx2/elementwise_avx2.h"
#include "kernels/x86/avx2/float_matmul_avx2.h"
#include "kernels/x86/avx2/math_avx2.h"
#include "kernels/x86/avx2/packed_tile_avx2.h"

namespace tern::kernels::avx2 {
namespace {

struct Q4_0x16 {
    static constexpr int64_t kBlockBytes = kQ4_0x16BlockBytes;
    static constexpr int32_t kOffset = 8;
    // Rows 8h..8h+7 of a group-block: their 4-weight chunks and the dot with 32 activation bytes. The 16-bit pair
    // sums are added as they are and widened once per block: 8 of them (nibbles <= 15, |activations| <= 127) stay
    // within 8 * 2 * 15 * 127 = 30480, so no sum saturates and the result equals the 32-bit one.
    static __m256i dot(const uint8_t* quants, int half, const int8_t* q) {
        __m256i pairs = _mm256_setzero_si256();
        for (int k = 0; k < 8; ++k) {  // chunk k holds elements 4k..4k+3
            pairs = _mm256_add_epi16(
                pairs, _mm256_maddubs_epi16(nibble_chunk(quants, half, k), broadcast_4_bytes(q + 4 * k)));
        }
        return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    }
};

struct Q8_0x16 {
    static constexpr int64_t kBlockBytes = kQ8_0x16BlockBytes;
    static constexpr int32_t kOffset = 0;  // the sign trick multiplies the signed weights directly
    static __m256i dot(const uint8_t* quants, int half, const int8_t* q) {
        const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
        __m256i total = _mm256_setzero_si256();
        for (int chunk = 0; chunk < 8; ++chunk) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(quants + chunk * 64 + half * 32));
            const __m256i weights = _mm256_xor_si256(raw, flip);  // w + 128 -> w
            const __m256i activations = broadcast_4_bytes(q + 4 * chunk);
            total = _mm256_add_epi32(total, pair_sums(_mm256_abs_epi8(activations), _mm256_sign_epi8(weights, activations)));
        }
        return total;
    }
};

// Per span of activation blocks sharing d_a: partial = sum of d_w * (dot - offset * sum_q), y += d_a * partial
// (the order of the scalar reference).
template <typename Format>
void matmul_packed(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                   int64_t group_end, float* y, int64_t y_stride) {
    const int64_t num_blocks = weights.view.row_length / 32;
    for_each_half_group(weights, activations.num_tokens, group_begin, group_end, y, y_stride,
                        [&](int64_t group_idx, int half, int64_t token_idx) {
        const int64_t first_block = token_idx * num_blocks;
        __m256 total = _mm256_setzero_ps();
        for (int64_t span_begin = 0; span_begin < num_blocks; span_begin += kBlocksPerScaleSpan) {
            __m256 partial = _mm256_setzero_ps();
            for (int64_t block_idx = span_begin; block_idx < std::min(num_blocks, span_begin + kBlocksPerScaleSpan);
                 ++block_idx) {
                const uint8_t* block = weights.group(group_idx) + block_idx * Format::kBlockBytes;
                const __m256 weight_scales =
                    _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + half * 16)));
                const int8_t* q = activations.q8.data() + token_idx * activations.length + block_idx * 32;
                const __m256i dot = _mm256_sub_epi32(
                    Format::dot(block + 32, half, q),
                    _mm256_set1_epi32(Format::kOffset * activations.block_sum[first_block + block_idx]));
                partial = _mm256_fmadd_ps(weight_scales, _mm256_cvtepi32_ps(dot), partial);
            }
            total = _mm256_fmadd_ps(partial, _mm256_set1_ps(activations.scale[first_block + span_begin]), total);
        }
        return total;
    });
}

void quantize_activations(const float* x, int64_t length, int8_t* q, float* scale, float* sum, int32_t* block_sum) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const int64_t num_blocks = length / 32;
    for (int64_t span_begin = 0; span_begin < num_blocks; span_begin += kBlocksPerScaleSpan) {
        const int64_t span_end = std::min(num_blocks, span_begin + kBlocksPerScaleSpan);
        __m256 max_abs = _mm256_setzero_ps();
        for (int64_t idx = span_begin * 32; idx < span_end * 32; idx += 8) {
            max_abs = _mm256_max_ps(max_abs, _mm256_and_ps(_mm256_loadu_ps(x + idx), abs_mask));
        }
        __m128 folded = _mm_max_ps(_mm256_castps256_ps128(max_abs), _mm256_extractf128_ps(max_abs, 1));
        folded = _mm_max_ps(folded, _mm_movehl_ps(folded, folded));
        folded = _mm_max_ss(folded, _mm_shuffle_ps(folded, folded, 1));
        const float d = _mm_cvtss_f32(folded) / 127.0f;
        const __m256 inverse = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
        for (int64_t block_idx = span_begin; block_idx < span_end; ++block_idx) {
            int32_t rounded[32];
            for (int part = 0; part < 4; ++part) {
                const __m256 values = _mm256_loadu_ps(x + block_idx * 32 + part * 8);
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(rounded + part * 8),
                                    _mm256_cvtps_epi32(_mm256_mul_ps(values, inverse)));  // half to even
            }
            int32_t total = 0;
            for (int idx = 0; idx < 32; ++idx) {
                q[block_idx * 32 + idx] = static_cast<int8_t>(rounded[idx]);
                total += rounded[idx];
            }
            scale[block_idx] = d;
            sum[block_idx] = d * static_cast<float>(total);
            block_sum[block_idx] = total;
        }
    }
}

double sum_f32(const float* x, int64_t length) {
    __m256 sums[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t idx = 0;
    for (; idx + 32 <= length; idx += 32) {
        for (int lane = 0; lane < 4; ++lane) sums[lane] = _mm256_add_ps(sums[lane], _mm256_loadu_ps(x + idx + 8 * lane));
    }
    double total = horizontal_sum(_mm256_add_ps(_mm256_add_ps(sums[0], sums[1]), _mm256_add_ps(sums[2], sums[3])));
    for (; idx < length; ++idx) total += x[idx];
    return total;
}

}  // namespace

const KernelTable* table() {
    static const KernelTable kTable = [] {
        KernelTable kernels;
        kernels.isa = Isa::kAvx2;
        kernels.matmul_q4_0x16 = matmul_packed<Q4_0x16>;
        kernels.matmul_q8_0x16 = matmul_packed<Q8_0x16>;
        kernels.matmul_q6_kx16 = matmul_q6_kx16;
        kernels.matmul_q4_kx16 = matmul_q4_kx16;
        kernels.matmul_q5_kx16 = matmul_q5_kx16;
        set_float_matmuls(&kernels);
        kernels.quantize_activations = quantize_activations;
        kernels.sum_f32 = sum_f32;
        kernels.attention_group = attention_group;
        kernels.attention_queries = attend_each_query<attention_group>;
        kernels.rms_norm = rms_norm;
        kernels.silu_mul = silu_mul;
        kernels.gelu_mul = gelu_mul;
        kernels.rope = rope;
        return kernels;
    }();
    return &kTable;
}

}  // namespace tern::kernels::avx2
