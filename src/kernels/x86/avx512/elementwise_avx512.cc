// AVX-512 element-wise kernels: RMSNorm and SwiGLU (silu(gate) * up) with the vector exp.
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

}  // namespace tern::kernels::avx512
