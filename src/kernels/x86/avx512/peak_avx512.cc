// Compute ceilings of this core: back-to-back vpdpbusd and vfmadd231ps on 16 independent accumulators, so that
// neither latency nor memory limits them. `tern bench compute` times these to give the int8 and fp32 peaks that
// the matmul kernels are compared against.
#include <immintrin.h>

#include <cstdint>

#include "kernels/kernels.h"

namespace tern::kernels::avx512 {

double int8_dot_peak_loop(int64_t iterations) {
    __m512i acc[kPeakChains];
    for (int chain = 0; chain < kPeakChains; ++chain) acc[chain] = _mm512_set1_epi32(chain);
    const __m512i unsigned_bytes = _mm512_set1_epi8(1), signed_bytes = _mm512_set1_epi8(-1);
    for (int64_t iteration = 0; iteration < iterations; ++iteration) {
        for (int chain = 0; chain < kPeakChains; ++chain) {
            acc[chain] = _mm512_dpbusd_epi32(acc[chain], unsigned_bytes, signed_bytes);
        }
    }
    // The lanes wrap after a few hundred million iterations (the hardware's add wraps); the sum that keeps the loop
    // alive is taken in 64 bits, as _mm512_reduce_add_epi32's int additions would overflow (UBSan found it).
    alignas(64) int32_t lanes[16];
    int64_t sum = 0;
    for (int chain = 0; chain < kPeakChains; ++chain) {
        _mm512_store_si512(lanes, acc[chain]);
        for (int32_t lane : lanes) sum += lane;
    }
    return static_cast<double>(sum);
}

double fp32_fma_peak_loop(int64_t iterations) {
    __m512 acc[kPeakChains];
    for (int chain = 0; chain < kPeakChains; ++chain) acc[chain] = _mm512_set1_ps(static_cast<float>(chain));
    const __m512 factor = _mm512_set1_ps(0.999f), addend = _mm512_set1_ps(0.001f);
    for (int64_t iteration = 0; iteration < iterations; ++iteration) {
        for (int chain = 0; chain < kPeakChains; ++chain) acc[chain] = _mm512_fmadd_ps(acc[chain], factor, addend);
    }
    __m512 total = _mm512_setzero_ps();
    for (int chain = 0; chain < kPeakChains; ++chain) total = _mm512_add_ps(total, acc[chain]);
    return static_cast<double>(_mm512_reduce_add_ps(total));
}

}  // namespace tern::kernels::avx512
