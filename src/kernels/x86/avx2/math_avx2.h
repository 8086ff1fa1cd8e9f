// Small AVX2 helpers shared by the AVX2 kernel files.
#pragma once

#include <immintrin.h>

namespace tern::kernels::avx2 {

// The sum of a vector's 8 lanes.
inline float horizontal_sum(__m256 values) {
    const __m128 folded = _mm_add_ps(_mm256_castps256_ps128(values), _mm256_extractf128_ps(values, 1));
    const __m128 pairs = _mm_add_ps(folded, _mm_movehl_ps(folded, folded));
    return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}

// exp(x) to about 2 ulp for x in [-87, 88]; 0 below (what softmax wants for masked scores). Cephes' expf.
inline __m256 exp_ps(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    // 2^n from the exponent bits; n is in [-126, 127] after the clamp.
    const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const __m256 result = _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
    return _mm256_blendv_ps(result, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LE_OQ));
}

// tanh(x) as 1 - 2 / (exp(2x) + 1): saturates to +-1 where exp_ps clamps; about 1e-7 absolute error near 0.
inline __m256 tanh_ps(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 e = exp_ps(_mm256_add_ps(x, x));
    return _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
}

}  // namespace tern::kernels::avx2
