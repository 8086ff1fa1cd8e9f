// AVX-512 register tiles of the row-major float matmuls (F32, F16 and BF16 weights, float activations); the loop
// nest is kernels/float_tiles.h. A tile of 4 rows x 4 tokens keeps 16 accumulators of 16 lanes: each weight vector
// feeds 4 FMAs and each activation vector 4, so the loads stay at half an FMA's rate. Each output's 16 lanes are
// added at the end of the row.
#include <immintrin.h>

#include <cstdint>

#include "kernels/float_tiles.h"
#include "kernels/kernels.h"
#include "kernels/x86/avx512/float_matmul_avx512.h"

namespace tern::kernels::avx512 {
namespace {

// load(row, idx): 16 weights from element idx as floats; load(row, idx, mask): the masked lanes only (zero elsewhere).
struct F32Format {
    static __m512 load(const uint8_t* row, int64_t idx) {
        return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + idx);
    }
    static __m512 load(const uint8_t* row, int64_t idx, __mmask16 mask) {
        return _mm512_maskz_loadu_ps(mask, reinterpret_cast<const float*>(row) + idx);
    }
};

struct F16Format {
    static __m512 load(const uint8_t* row, int64_t idx) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row) + idx / 16));
    }
    static __m512 load(const uint8_t* row, int64_t idx, __mmask16 mask) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, reinterpret_cast<const uint16_t*>(row) + idx));
    }
};

// bfloat16 is the upper half of a float: widening and shifting by 16 bits is the exact conversion.
struct BF16Format {
    static __m512 widen(__m256i halves) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(halves), 16));
    }
    static __m512 load(const uint8_t* row, int64_t idx) {
        return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row) + idx / 16));
    }
    static __m512 load(const uint8_t* row, int64_t idx, __mmask16 mask) {
        return widen(_mm256_maskz_loadu_epi16(mask, reinterpret_cast<const uint16_t*>(row) + idx));
    }
};

template <typename Format>
struct FloatKernel {
    template <int kRows, int kTokens>
    static void tile(const FloatTileArgs& args, int64_t first_row, int64_t first_token) {
        const int64_t length = args.weights->row_length;
        const uint8_t* rows[kRows];
        for (int r = 0; r < kRows; ++r) rows[r] = args.weights->row(first_row + r);
        const float* x = args.x + first_token * args.x_stride;
        __m512 sums[kRows][kTokens];
        for (auto& row : sums) for (__m512& sum : row) sum = _mm512_setzero_ps();
        int64_t idx = 0;
        for (; idx + 16 <= length; idx += 16) {
            __m512 w[kRows];
            for (int r = 0; r < kRows; ++r) w[r] = Format::load(rows[r], idx);
            for (int t = 0; t < kTokens; ++t) {
                const __m512 activation = _mm512_loadu_ps(x + t * args.x_stride + idx);
                for (int r = 0; r < kRows; ++r) sums[r][t] = _mm512_fmadd_ps(w[r], activation, sums[r][t]);
            }
        }
        if (idx < length) {
            const __mmask16 mask = static_cast<__mmask16>((1u << (length - idx)) - 1);
            __m512 w[kRows];
            for (int r = 0; r < kRows; ++r) w[r] = Format::load(rows[r], idx, mask);
            for (int t = 0; t < kTokens; ++t) {
                const __m512 activation = _mm512_maskz_loadu_ps(mask, x + t * args.x_stride + idx);
                for (int r = 0; r < kRows; ++r) sums[r][t] = _mm512_fmadd_ps(w[r], activation, sums[r][t]);
            }
        }
        for (int t = 0; t < kTokens; ++t) {
            for (int r = 0; r < kRows; ++r) {
                args.y[(first_token + t) * args.y_stride + first_row + r] = _mm512_reduce_add_ps(sums[r][t]);
            }
        }
    }
};

template <typename Format>
using Tiled = FloatTiledMatmul<FloatKernel<Format>, 4, 4>;

}  // namespace

void set_float_matmuls(KernelTable* table) {
    table->matmul_f32 = Tiled<F32Format>::run;
    table->matmul_f16 = Tiled<F16Format>::run;
    table->matmul_bf16 = Tiled<BF16Format>::run;
}

}  // namespace tern::kernels::avx512
