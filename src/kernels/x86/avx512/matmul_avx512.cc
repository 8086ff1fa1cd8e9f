// AVX-512 (F, BW, VL, VNNI) kernels and the AVX-512 dispatch table. This file alone is compiled with those flags;
// nothing here runs unless CPUID reported them (kernels/dispatch.cc). The packed int8 matmuls are in
// packed_matmul_avx512.cc.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/activations.h"
#include "kernels/kernels.h"
#include "kernels/x86/avx512/float_matmul_avx512.h"
#include "kernels/x86/avx512/packed_matmul_avx512.h"

namespace tern::kernels::avx512 {
namespace {

void quantize_activations(const float* x, int64_t length, int8_t* q, float* scale, float* sum, int32_t* block_sum) {
    const int64_t num_blocks = length / 32;
    for (int64_t span_begin = 0; span_begin < num_blocks; span_begin += kBlocksPerScaleSpan) {
        const int64_t span_end = std::min(num_blocks, span_begin + kBlocksPerScaleSpan);
        __m512 max_abs = _mm512_setzero_ps();
        for (int64_t idx = span_begin * 32; idx < span_end * 32; idx += 16) {
            max_abs = _mm512_max_ps(max_abs, _mm512_abs_ps(_mm512_loadu_ps(x + idx)));
        }
        const float d = _mm512_reduce_max_ps(max_abs) / 127.0f;
        const __m512 inverse = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
        for (int64_t block_idx = span_begin; block_idx < span_end; ++block_idx) {
            const __m512i low_q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + block_idx * 32), inverse));
            const __m512i high_q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + block_idx * 32 + 16), inverse));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(q + block_idx * 32), _mm512_cvtsepi32_epi8(low_q));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(q + block_idx * 32 + 16), _mm512_cvtsepi32_epi8(high_q));
            const int32_t total = _mm512_reduce_add_epi32(_mm512_add_epi32(low_q, high_q));
            scale[block_idx] = d;
            sum[block_idx] = d * static_cast<float>(total);
            block_sum[block_idx] = total;
        }
    }
}

double sum_f32(const float* x, int64_t length) {
    __m512 sums[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t idx = 0;
    for (; idx + 64 <= length; idx += 64) {
        for (int lane = 0; lane < 4; ++lane) sums[lane] = _mm512_add_ps(sums[lane], _mm512_loadu_ps(x + idx + 16 * lane));
    }
    double total = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(sums[0], sums[1]), _mm512_add_ps(sums[2], sums[3])));
    for (; idx < length; ++idx) total += x[idx];
    return total;
}

}  // namespace

const KernelTable* table() {
    static const KernelTable kTable = [] {
        KernelTable kernels;
        kernels.isa = Isa::kAvx512;
        kernels.matmul_q4_0x16 = matmul_q4_0x16;
        kernels.matmul_q8_0x16 = matmul_q8_0x16;
        kernels.matmul_q6_kx16 = matmul_q6_kx16;
        kernels.matmul_q4_kx16 = matmul_q4_kx16;
        kernels.matmul_q5_kx16 = matmul_q5_kx16;
        set_float_matmuls(&kernels);
        kernels.quantize_activations = quantize_activations;
        kernels.sum_f32 = sum_f32;
        kernels.attention_group = attention_group;
        kernels.attention_queries = attention_queries;
        kernels.rms_norm = rms_norm;
        kernels.silu_mul = silu_mul;
        kernels.gelu_mul = gelu_mul;
        kernels.rope = rope;
        kernels.int8_dot_peak_loop = int8_dot_peak_loop;
        kernels.fp32_fma_peak_loop = fp32_fma_peak_loop;
        kernels.int8_ops_per_instruction = 64 * 2;  // vpdpbusd zmm: 64 byte products, added in fours
        kernels.fp32_flops_per_instruction = 16 * 2;
        return kernels;
    }();
    return &kTable;
}

}  // namespace tern::kernels::avx512
