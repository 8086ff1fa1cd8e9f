// AVX2 + FMA register tiles of the row-major float matmuls (F32, F16 and BF16 weights, float activations); the loop
// nest is kernels/float_tiles.h. A tile of 4 rows x 2 tokens keeps 8 accumulators of 8 lanes in the 16 registers
// (4 for decode, enough to cover the FMA latency while the weights stream); each output's lanes are added at the end
// of the row. The last length % 8 elements go through a zero-padded copy, since AVX2 has no masked 16-bit loads.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/float_tiles.h"
#include "kernels/kernels.h"
#include "kernels/x86/avx2/float_matmul_avx2.h"
#include "kernels/x86/avx2/math_avx2.h"

namespace tern::kernels::avx2 {
namespace {

// load(row, idx): 8 weights from element idx as floats; Element is the stored type (for the padded tail copy).
struct F32Format {
    using Element = float;
    static __m256 load(const Element* row, int64_t idx) { return _mm256_loadu_ps(row + idx); }
};

struct F16Format {
    using Element = uint16_t;
    static __m256 load(const Element* row, int64_t idx) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + idx)));
    }
};

// bfloat16 is the upper half of a float: widening and shifting by 16 bits is the exact conversion.
struct BF16Format {
    using Element = uint16_t;
    static __m256 load(const Element* row, int64_t idx) {
        const __m256i widened = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + idx)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(widened, 16));
    }
};

template <typename Format>
struct FloatKernel {
    using Element = typename Format::Element;

    template <int kRows, int kTokens>
    static void tile(const FloatTileArgs& args, int64_t first_row, int64_t first_token) {
        const int64_t length = args.weights->row_length;
        const Element* rows[kRows];
        for (int r = 0; r < kRows; ++r) rows[r] = reinterpret_cast<const Element*>(args.weights->row(first_row + r));
        const float* x[kTokens];
        for (int t = 0; t < kTokens; ++t) x[t] = args.x + (first_token + t) * args.x_stride;
        __m256 sums[kRows][kTokens];
        for (auto& row : sums) for (__m256& sum : row) sum = _mm256_setzero_ps();
        const auto step = [&](const Element* const* weight_rows, const float* const* activations, int64_t idx) {
            __m256 w[kRows];
            for (int r = 0; r < kRows; ++r) w[r] = Format::load(weight_rows[r], idx);
            for (int t = 0; t < kTokens; ++t) {
                const __m256 activation = _mm256_loadu_ps(activations[t] + idx);
                for (int r = 0; r < kRows; ++r) sums[r][t] = _mm256_fmadd_ps(w[r], activation, sums[r][t]);
            }
        };
        int64_t idx = 0;
        for (; idx + 8 <= length; idx += 8) step(rows, x, idx);
        if (idx < length) {
            const size_t tail = static_cast<size_t>(length - idx);
            Element weight_tail[kRows][8] = {};
            float activation_tail[kTokens][8] = {};
            const Element* weight_rows[kRows];
            const float* activations[kTokens];
            for (int r = 0; r < kRows; ++r) {
                std::memcpy(weight_tail[r], rows[r] + idx, tail * sizeof(Element));
                weight_rows[r] = weight_tail[r];
            }
            for (int t = 0; t < kTokens; ++t) {
                std::memcpy(activation_tail[t], x[t] + idx, tail * sizeof(float));
                activations[t] = activation_tail[t];
            }
            step(weight_rows, activations, 0);
        }
        for (int t = 0; t < kTokens; ++t) {
            for (int r = 0; r < kRows; ++r) {
                args.y[(first_token + t) * args.y_stride + first_row + r] = horizontal_sum(sums[r][t]);
            }
        }
    }
};

template <typename Format>
using Tiled = FloatTiledMatmul<FloatKernel<Format>, 4, 2>;

}  // namespace

void set_float_matmuls(KernelTable* table) {
    table->matmul_f32 = Tiled<F32Format>::run;
    table->matmul_f16 = Tiled<F16Format>::run;
    table->matmul_bf16 = Tiled<BF16Format>::run;
}

}  // namespace tern::kernels::avx2
