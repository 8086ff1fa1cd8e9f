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

}  // namespace tern::kernels::avx2
