// Vector math for the AVX-512 kernels. Include only from files compiled with AVX-512 flags.
#pragma once

#include <immintrin.h>

namespace tern::kernels::avx512 {

// exp(x) to about 2 ulp for x in [-87, 88]; below that it returns 0 (what softmax wants for masked scores).
inline __m512 exp_ps(__m512 x) {
    const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
    const __m512 ln2_high = _mm512_set1_ps(0.693359375f);
    const __m512 ln2_low = _mm512_set1_ps(-2.12194440e-4f);
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    x = _mm512_min_ps(x, _mm512_set1_ps(88.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, ln2_high, x);
    r = _mm512_fnmadd_ps(n, ln2_low, r);
    // exp(r) on [-ln2/2, ln2/2]: Cephes expf polynomial.
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    const __m512 result = _mm512_scalef_ps(p, n);
    const __mmask16 underflow = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LE_OQ);
    return _mm512_mask_blend_ps(underflow, result, _mm512_setzero_ps());
}

// tanh(x) as 1 - 2 / (exp(2x) + 1): saturates to +-1 where exp_ps clamps; about 1e-7 absolute error near 0.
inline __m512 tanh_ps(__m512 x) {
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 e = exp_ps(_mm512_add_ps(x, x));
    return _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
}

// Lane i of the result is the sum of all lanes of v[i] (a transpose-and-add tree over 16 vectors).
inline __m512 sum_each_16(const __m512* v) {
    __m512 pairs[8];
    for (int idx = 0; idx < 8; ++idx) {
        pairs[idx] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * idx], v[2 * idx + 1]),
                                   _mm512_unpackhi_ps(v[2 * idx], v[2 * idx + 1]));
    }
    __m512 quads[4];
    for (int idx = 0; idx < 4; ++idx) {
        const __m512d left = _mm512_castps_pd(pairs[2 * idx]);
        const __m512d right = _mm512_castps_pd(pairs[2 * idx + 1]);
        quads[idx] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(left, right)),
                                   _mm512_castpd_ps(_mm512_unpackhi_pd(left, right)));
    }
    __m512 halves[2];
    for (int idx = 0; idx < 2; ++idx) {
        halves[idx] = _mm512_add_ps(_mm512_shuffle_f32x4(quads[2 * idx], quads[2 * idx + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm512_shuffle_f32x4(quads[2 * idx], quads[2 * idx + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
    return _mm512_add_ps(_mm512_shuffle_f32x4(halves[0], halves[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(halves[0], halves[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

}  // namespace tern::kernels::avx512
