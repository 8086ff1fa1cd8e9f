#include "kernels/ref/ref_kernels.h"

#include "quant/dequantize.h"

namespace tern::kernels::ref {

void matmul_rows(const MatrixView& weights, int64_t row_begin, int64_t row_end, const float* x, int64_t x_stride,
                 int64_t num_tokens, float* y, int64_t y_stride, float* row_scratch) {
    const int64_t length = weights.row_length;
    for (int64_t row_idx = row_begin; row_idx < row_end; ++row_idx) {
        const float* row = nullptr;
        if (weights.type == DType::kF32) {
            row = reinterpret_cast<const float*>(weights.row(row_idx));
        } else {
            dequantize_row(weights.type, weights.row(row_idx), row_scratch, length);
            row = row_scratch;
        }
        for (int64_t token_idx = 0; token_idx < num_tokens; ++token_idx) {
            const float* activations = x + token_idx * x_stride;
            float sum = 0.0f;
            for (int64_t idx = 0; idx < length; ++idx) sum += row[idx] * activations[idx];
            y[token_idx * y_stride + row_idx] = sum;
        }
    }
}

}  // namespace tern::kernels::ref
