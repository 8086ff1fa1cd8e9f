// AVX-512 element-wise kernels: RMSNorm, SwiGLU (silu(gate) * up) with the vector exp, and RoPE in both pair orders.
// RoPE rounds each product and sum as the reference does (separate multiplies, no FMA; this file is compiled with
// -ffp-contract=off): it gives the reference's bits, so greedy outputs do not change with the ISA.
#include <immintrin.h>

#include <cmath>

#include "kernels/kernels.h"
#include "kernels/x86/avx512/math_avx512.h"

namespace tern::kernels::avx512 {

namespace {

inline __mmask16 tail_mask(int64_t remaining) {
    return remaining >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << remaining) - 1);
}

}  // namespace

void rms_norm(const float* x, const float* weight, int64_t length, float eps, float* out) {
    __m512 sum_squares = _mm512_setzero_ps();
    for (int64_t idx = 0; idx < length; idx += 16) {
        const __m512 values = _mm512_maskz_loadu_ps(tail_mask(length - idx), x + idx);
        sum_squares = _mm512_fmadd_ps(values, values, sum_squares);
    }
    const double mean = static_cast<double>(_mm512_reduce_add_ps(sum_squares)) / static_cast<double>(length);
    const __m512 inv_rms = _mm512_set1_ps(static_cast<float>(1.0 / std::sqrt(mean + eps)));
    for (int64_t idx = 0; idx < length; idx += 16) {
        const __mmask16 mask = tail_mask(length - idx);
        const __m512 values = _mm512_maskz_loadu_ps(mask, x + idx);
        const __m512 scaled = _mm512_mul_ps(_mm512_mul_ps(values, inv_rms), _mm512_maskz_loadu_ps(mask, weight + idx));
        _mm512_mask_storeu_ps(out + idx, mask, scaled);
    }
}

void silu_mul(const float* gate, const float* up, int64_t length, float* out) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t idx = 0; idx < length; idx += 16) {
        const __mmask16 mask = tail_mask(length - idx);
        const __m512 g = _mm512_maskz_loadu_ps(mask, gate + idx);
        const __m512 sigmoid = _mm512_div_ps(one, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), g))));
        _mm512_mask_storeu_ps(out + idx, mask, _mm512_mul_ps(_mm512_mul_ps(g, sigmoid), _mm512_maskz_loadu_ps(mask, up + idx)));
    }
}

void gelu_mul(const float* gate, const float* up, int64_t length, float* out) {
    const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
    const __m512 sqrt_2_over_pi = _mm512_set1_ps(0.7978845608f), cubic = _mm512_set1_ps(0.044715f);
    for (int64_t idx = 0; idx < length; idx += 16) {
        const __mmask16 mask = tail_mask(length - idx);
        const __m512 x = _mm512_maskz_loadu_ps(mask, gate + idx);
        const __m512 inner = _mm512_mul_ps(sqrt_2_over_pi, _mm512_fmadd_ps(_mm512_mul_ps(cubic, x), _mm512_mul_ps(x, x), x));
        const __m512 gelu = _mm512_mul_ps(_mm512_mul_ps(half, x), _mm512_add_ps(one, tanh_ps(inner)));
        _mm512_mask_storeu_ps(out + idx, mask, _mm512_mul_ps(gelu, _mm512_maskz_loadu_ps(mask, up + idx)));
    }
}

void rope(float* head, int64_t rope_dim, const float* cos_table, const float* sin_table, bool pair_halves) {
    const int64_t num_pairs = rope_dim / 2;
    if (pair_halves) {
        float* second_half = head + num_pairs;
        for (int64_t idx = 0; idx < num_pairs; idx += 16) {
            const __mmask16 mask = tail_mask(num_pairs - idx);
            const __m512 x0 = _mm512_maskz_loadu_ps(mask, head + idx), x1 = _mm512_maskz_loadu_ps(mask, second_half + idx);
            const __m512 c = _mm512_maskz_loadu_ps(mask, cos_table + idx), s = _mm512_maskz_loadu_ps(mask, sin_table + idx);
            _mm512_mask_storeu_ps(head + idx, mask, _mm512_sub_ps(_mm512_mul_ps(x0, c), _mm512_mul_ps(x1, s)));
            _mm512_mask_storeu_ps(second_half + idx, mask, _mm512_add_ps(_mm512_mul_ps(x0, s), _mm512_mul_ps(x1, c)));
        }
        return;
    }
    // Adjacent pairs, 8 per vector: each angle's cos and sin duplicated into both lanes of its pair; even lanes get
    // x0 c - x1 s, odd lanes x1 c + x0 s.
    constexpr __mmask16 kOddLanes = 0xAAAA;
    const __m512i duplicate = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    for (int64_t pair_idx = 0; pair_idx < num_pairs; pair_idx += 8) {
        const __mmask16 pair_mask = tail_mask(num_pairs - pair_idx);
        const __mmask16 value_mask = tail_mask(2 * (num_pairs - pair_idx));
        const __m512 c = _mm512_permutexvar_ps(duplicate, _mm512_maskz_loadu_ps(pair_mask & 0xFF, cos_table + pair_idx));
        const __m512 s = _mm512_permutexvar_ps(duplicate, _mm512_maskz_loadu_ps(pair_mask & 0xFF, sin_table + pair_idx));
        const __m512 x = _mm512_maskz_loadu_ps(value_mask, head + 2 * pair_idx);
        const __m512 swapped = _mm512_permute_ps(x, 0xB1);
        const __m512 cos_terms = _mm512_mul_ps(x, c), sin_terms = _mm512_mul_ps(swapped, s);
        const __m512 rotated = _mm512_mask_add_ps(_mm512_sub_ps(cos_terms, sin_terms), kOddLanes, cos_terms, sin_terms);
        _mm512_mask_storeu_ps(head + 2 * pair_idx, value_mask, rotated);
    }
}

}  // namespace tern::kernels::avx512
