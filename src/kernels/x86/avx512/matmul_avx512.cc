// AVX-512 (F, BW, VL, VNNI) kernels. This file alone is compiled with those flags; nothing here runs unless
// CPUID reported them (kernels/dispatch.cc).
//
// Packed int8 matmul: a 64-byte load holds 4 consecutive weights of 16 rows (kernels/packed_weights.h); vpdpbusd
// with 4 activation bytes broadcast adds their products into 16 per-row sums. Per 32-value block:
//   y_row += d_w[row] * (d_a * dot_row - offset * sum_a)
// Tokens are processed in tiles so each weight load serves the whole tile (prefill, batched decode).
#include <immintrin.h>

#include <cstring>

#include "kernels/kernels.h"

namespace tern::kernels::avx512 {
namespace {

inline __m512i broadcast_4_bytes(const int8_t* source) {
    int32_t value;
    std::memcpy(&value, source, 4);
    return _mm512_set1_epi32(value);
}

inline void store_rows(float* destination, __m512 values, int64_t num_valid) {
    if (num_valid >= 16) {
        _mm512_storeu_ps(destination, values);
    } else {
        _mm512_mask_storeu_ps(destination, static_cast<__mmask16>((1u << num_valid) - 1), values);
    }
}

// Unpacks one group-block's weights into 8 vectors: w[k] holds elements 4k..4k+3 of the 16 rows.
struct Q4_0x16 {
    static constexpr int64_t kBlockBytes = kQ4_0x16BlockBytes;
    static constexpr float kOffset = 8.0f;
    static void load(const uint8_t* quants, __m512i* w) {
        const __m512i low_mask = _mm512_set1_epi8(0x0F);
        for (int chunk = 0; chunk < 4; ++chunk) {
            const __m512i raw = _mm512_loadu_si512(quants + chunk * 64);
            w[chunk] = _mm512_and_si512(raw, low_mask);
            w[chunk + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low_mask);
        }
    }
};

struct Q8_0x16 {
    static constexpr int64_t kBlockBytes = kQ8_0x16BlockBytes;
    static constexpr float kOffset = 128.0f;
    static void load(const uint8_t* quants, __m512i* w) {
        for (int chunk = 0; chunk < 8; ++chunk) w[chunk] = _mm512_loadu_si512(quants + chunk * 64);
    }
};

template <typename Format, int kTile>
void matmul_group_tile(const uint8_t* group, int64_t num_blocks, const Activations& activations, int64_t first_token,
                       float* y, int64_t y_stride, int64_t first_row, int64_t num_valid_rows) {
    __m512 totals[kTile];
    for (int tile_idx = 0; tile_idx < kTile; ++tile_idx) totals[tile_idx] = _mm512_setzero_ps();
    const int64_t length = activations.length;
    for (int64_t block_idx = 0; block_idx < num_blocks; ++block_idx) {
        const uint8_t* block = group + block_idx * Format::kBlockBytes;
        const __m512 weight_scales = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)));
        __m512i w[8];
        Format::load(block + 32, w);
        for (int tile_idx = 0; tile_idx < kTile; ++tile_idx) {
            const int64_t token_idx = first_token + tile_idx;
            const int8_t* q = activations.q8.data() + token_idx * length + block_idx * 32;
            // Two independent chains: one chain of 8 dependent vpdpbusd would bound decode by their latency.
            __m512i dot_low = _mm512_setzero_si512(), dot_high = _mm512_setzero_si512();
            for (int chunk = 0; chunk < 4; ++chunk) {
                dot_low = _mm512_dpbusd_epi32(dot_low, w[chunk], broadcast_4_bytes(q + 4 * chunk));
                dot_high = _mm512_dpbusd_epi32(dot_high, w[chunk + 4], broadcast_4_bytes(q + 16 + 4 * chunk));
            }
            const __m512i dot = _mm512_add_epi32(dot_low, dot_high);
            const int64_t scale_idx = token_idx * num_blocks + block_idx;
            const __m512 term = _mm512_fmsub_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(activations.scale[scale_idx]),
                                                _mm512_set1_ps(Format::kOffset * activations.sum[scale_idx]));
            totals[tile_idx] = _mm512_fmadd_ps(weight_scales, term, totals[tile_idx]);
        }
    }
    for (int tile_idx = 0; tile_idx < kTile; ++tile_idx) {
        store_rows(y + (first_token + tile_idx) * y_stride + first_row, totals[tile_idx], num_valid_rows);
    }
}

template <typename Format>
void matmul_packed(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                   int64_t group_end, float* y, int64_t y_stride) {
    constexpr int kTile = 4;
    const int64_t num_blocks = weights.view.row_length / 32;
    for (int64_t group_idx = group_begin; group_idx < group_end; ++group_idx) {
        const int64_t first_row = group_idx * kPackRows;
        const int64_t num_valid = weights.view.num_rows - first_row;
        int64_t token_idx = 0;
        for (; token_idx + kTile <= activations.num_tokens; token_idx += kTile) {
            matmul_group_tile<Format, kTile>(weights.group(group_idx), num_blocks, activations, token_idx, y, y_stride,
                                             first_row, num_valid);
        }
        for (; token_idx < activations.num_tokens; ++token_idx) {
            matmul_group_tile<Format, 1>(weights.group(group_idx), num_blocks, activations, token_idx, y, y_stride,
                                         first_row, num_valid);
        }
    }
}

inline float dot_f32(const float* a, const float* b, int64_t length) {
    __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
    int64_t idx = 0;
    for (; idx + 32 <= length; idx += 32) {
        sum0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + idx), _mm512_loadu_ps(b + idx), sum0);
        sum1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + idx + 16), _mm512_loadu_ps(b + idx + 16), sum1);
    }
    for (; idx < length; idx += 16) {
        const __mmask16 mask = length - idx >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (length - idx)) - 1);
        sum0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, a + idx), _mm512_maskz_loadu_ps(mask, b + idx), sum0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(sum0, sum1));
}

inline float dot_f16(const uint16_t* a, const float* b, int64_t length) {
    __m512 sum = _mm512_setzero_ps();
    for (int64_t idx = 0; idx < length; idx += 16) {
        const __mmask16 mask = length - idx >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (length - idx)) - 1);
        const __m512 weights = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, a + idx));
        sum = _mm512_fmadd_ps(weights, _mm512_maskz_loadu_ps(mask, b + idx), sum);
    }
    return _mm512_reduce_add_ps(sum);
}

void matmul_f32(const MatrixView& weights, const Activations& activations, int64_t row_begin, int64_t row_end,
                float* y, int64_t y_stride) {
    for (int64_t row_idx = row_begin; row_idx < row_end; ++row_idx) {
        const float* row = reinterpret_cast<const float*>(weights.row(row_idx));
        for (int64_t token_idx = 0; token_idx < activations.num_tokens; ++token_idx) {
            y[token_idx * y_stride + row_idx] =
                dot_f32(row, activations.f32 + token_idx * activations.f32_stride, weights.row_length);
        }
    }
}

void matmul_f16(const MatrixView& weights, const Activations& activations, int64_t row_begin, int64_t row_end,
                float* y, int64_t y_stride) {
    for (int64_t row_idx = row_begin; row_idx < row_end; ++row_idx) {
        const uint16_t* row = reinterpret_cast<const uint16_t*>(weights.row(row_idx));
        for (int64_t token_idx = 0; token_idx < activations.num_tokens; ++token_idx) {
            y[token_idx * y_stride + row_idx] =
                dot_f16(row, activations.f32 + token_idx * activations.f32_stride, weights.row_length);
        }
    }
}

void quantize_activations(const float* x, int64_t length, int8_t* q, float* scale, float* sum) {
    for (int64_t block_idx = 0; block_idx < length / 32; ++block_idx) {
        const __m512 low = _mm512_loadu_ps(x + block_idx * 32);
        const __m512 high = _mm512_loadu_ps(x + block_idx * 32 + 16);
        const float max_abs = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(low), _mm512_abs_ps(high)));
        const float d = max_abs / 127.0f;
        const __m512 inverse = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
        const __m512i low_q = _mm512_cvtps_epi32(_mm512_mul_ps(low, inverse));  // round half to even
        const __m512i high_q = _mm512_cvtps_epi32(_mm512_mul_ps(high, inverse));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + block_idx * 32), _mm512_cvtsepi32_epi8(low_q));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + block_idx * 32 + 16), _mm512_cvtsepi32_epi8(high_q));
        scale[block_idx] = d;
        sum[block_idx] = d * static_cast<float>(_mm512_reduce_add_epi32(_mm512_add_epi32(low_q, high_q)));
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
        kernels.matmul_q4_0x16 = matmul_packed<Q4_0x16>;
        kernels.matmul_q8_0x16 = matmul_packed<Q8_0x16>;
        kernels.matmul_f32 = matmul_f32;
        kernels.matmul_f16 = matmul_f16;
        kernels.matmul_q6_k = matmul_q6_k;
        kernels.quantize_activations = quantize_activations;
        kernels.sum_f32 = sum_f32;
        kernels.attention_group = attention_group;
        kernels.rms_norm = rms_norm;
        kernels.silu_mul = silu_mul;
        return kernels;
    }();
    return &kTable;
}

}  // namespace tern::kernels::avx512
