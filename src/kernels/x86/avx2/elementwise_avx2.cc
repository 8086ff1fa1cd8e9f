// AVX2 + FMA element-wise kernels: RMSNorm, SwiGLU (silu(gate) * up) with the vector exp, and RoPE in both pair
// orders. Tails use masked loads and stores (the last < 4 adjacent pairs go to the reference). RoPE rounds each
// product and sum as the reference does (no FMA; this file is compiled with -ffp-contract=off): the same bits.
#include <immintrin.h>

#include <cmath>

#include "kernels/ref/ref_kernels.h"
#include "kernels/x86/avx2/elementwise_avx2.h"
#include "kernels/x86/avx2/math_avx2.h"

namespace tern::kernels::avx2 {
namespace {

// Lanes [0, remaining) set (all 8 when remaining >= 8), as _mm256_maskload_ps wants.
inline __m256i tail_mask(int64_t remaining) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(remaining < 8 ? remaining : 8)), lane);
}

// Rotates the pairs (x[2i], x[2i + 1]) of 8 floats by the 4 angles at cos_table / sin_table: even lanes get
// x0 c - x1 s, odd lanes x1 c + x0 s.
inline __m256 rotate_adjacent(__m256 x, __m128 cos4, __m128 sin4) {
    const __m256i duplicate = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
    const __m256 c = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(cos4), duplicate);
    const __m256 s = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(sin4), duplicate);
    const __m256 swapped = _mm256_permute_ps(x, 0xB1);
    return _mm256_addsub_ps(_mm256_mul_ps(x, c), _mm256_mul_ps(swapped, s));
}

}  // namespace

void rms_norm(const float* x, const float* weight, int64_t length, float eps, float* out) {
    __m256 sum_squares = _mm256_setzero_ps();
    for (int64_t idx = 0; idx < length; idx += 8) {
        const __m256 values = _mm256_maskload_ps(x + idx, tail_mask(length - idx));
        sum_squares = _mm256_fmadd_ps(values, values, sum_squares);
    }
    const double mean = static_cast<double>(horizontal_sum(sum_squares)) / static_cast<double>(length);
    const __m256 inv_rms = _mm256_set1_ps(static_cast<float>(1.0 / std::sqrt(mean + eps)));
    for (int64_t idx = 0; idx < length; idx += 8) {
        const __m256i mask = tail_mask(length - idx);
        const __m256 values = _mm256_maskload_ps(x + idx, mask);
        _mm256_maskstore_ps(out + idx, mask,
                            _mm256_mul_ps(_mm256_mul_ps(values, inv_rms), _mm256_maskload_ps(weight + idx, mask)));
    }
}

void silu_mul(const float* gate, const float* up, int64_t length, float* out) {
    const __m256 one = _mm256_set1_ps(1.0f);
    for (int64_t idx = 0; idx < length; idx += 8) {
        const __m256i mask = tail_mask(length - idx);
        const __m256 g = _mm256_maskload_ps(gate + idx, mask);
        const __m256 sigmoid = _mm256_div_ps(one, _mm256_add_ps(one, exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g))));
        _mm256_maskstore_ps(out + idx, mask, _mm256_mul_ps(_mm256_mul_ps(g, sigmoid), _mm256_maskload_ps(up + idx, mask)));
    }
}

void gelu_mul(const float* gate, const float* up, int64_t length, float* out) {
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    const __m256 sqrt_2_over_pi = _mm256_set1_ps(0.7978845608f), cubic = _mm256_set1_ps(0.044715f);
    for (int64_t idx = 0; idx < length; idx += 8) {
        const __m256i mask = tail_mask(length - idx);
        const __m256 x = _mm256_maskload_ps(gate + idx, mask);
        const __m256 inner = _mm256_mul_ps(sqrt_2_over_pi, _mm256_fmadd_ps(_mm256_mul_ps(cubic, x), _mm256_mul_ps(x, x), x));
        const __m256 gelu = _mm256_mul_ps(_mm256_mul_ps(half, x), _mm256_add_ps(one, tanh_ps(inner)));
        _mm256_maskstore_ps(out + idx, mask, _mm256_mul_ps(gelu, _mm256_maskload_ps(up + idx, mask)));
    }
}

void rope(float* head, int64_t rope_dim, const float* cos_table, const float* sin_table, bool pair_halves) {
    const int64_t num_pairs = rope_dim / 2;
    if (pair_halves) {
        float* second_half = head + num_pairs;
        for (int64_t idx = 0; idx < num_pairs; idx += 8) {
            const __m256i mask = tail_mask(num_pairs - idx);
            const __m256 x0 = _mm256_maskload_ps(head + idx, mask), x1 = _mm256_maskload_ps(second_half + idx, mask);
            const __m256 c = _mm256_maskload_ps(cos_table + idx, mask), s = _mm256_maskload_ps(sin_table + idx, mask);
            _mm256_maskstore_ps(head + idx, mask, _mm256_sub_ps(_mm256_mul_ps(x0, c), _mm256_mul_ps(x1, s)));
            _mm256_maskstore_ps(second_half + idx, mask, _mm256_add_ps(_mm256_mul_ps(x0, s), _mm256_mul_ps(x1, c)));
        }
        return;
    }
    int64_t pair_idx = 0;
    for (; pair_idx + 4 <= num_pairs; pair_idx += 4) {
        const __m256 x = _mm256_loadu_ps(head + 2 * pair_idx);
        _mm256_storeu_ps(head + 2 * pair_idx,
                         rotate_adjacent(x, _mm_loadu_ps(cos_table + pair_idx), _mm_loadu_ps(sin_table + pair_idx)));
    }
    if (pair_idx < num_pairs) {
        ref::rope(head + 2 * pair_idx, 2 * (num_pairs - pair_idx), cos_table + pair_idx, sin_table + pair_idx, false);
    }
}

}  // namespace tern::kernels::avx2
