#include <cmath>

#include "kernels/ref/ref_kernels.h"

namespace tern::kernels::ref {

void rms_norm(const float* x, const float* weight, int64_t length, float eps, float* out) {
    // Accumulate in double: the sum of squares of a few thousand floats loses bits in float.
    double sum_squares = 0.0;
    for (int64_t idx = 0; idx < length; ++idx) sum_squares += static_cast<double>(x[idx]) * x[idx];
    const float inv_rms = static_cast<float>(1.0 / std::sqrt(sum_squares / static_cast<double>(length) + eps));
    for (int64_t idx = 0; idx < length; ++idx) out[idx] = x[idx] * inv_rms * weight[idx];
}

void rope(float* head, int64_t rope_dim, const float* cos_table, const float* sin_table, bool pair_halves) {
    const int64_t num_pairs = rope_dim / 2;
    for (int64_t pair_idx = 0; pair_idx < num_pairs; ++pair_idx) {
        float* first = pair_halves ? head + pair_idx : head + 2 * pair_idx;
        float* second = pair_halves ? head + pair_idx + num_pairs : head + 2 * pair_idx + 1;
        const float x0 = *first;
        const float x1 = *second;
        *first = x0 * cos_table[pair_idx] - x1 * sin_table[pair_idx];
        *second = x0 * sin_table[pair_idx] + x1 * cos_table[pair_idx];
    }
}

void silu_mul(const float* gate, const float* up, int64_t length, float* out) {
    for (int64_t idx = 0; idx < length; ++idx) out[idx] = gate[idx] / (1.0f + std::exp(-gate[idx])) * up[idx];
}

// In double: the reference the vector versions are held to (tanh of a float argument loses little, but the cube
// term of a large gate would overflow the float form's intermediate before tanh saturates).
void gelu_mul(const float* gate, const float* up, int64_t length, float* out) {
    constexpr double kSqrt2OverPi = 0.79788456080286535588;
    for (int64_t idx = 0; idx < length; ++idx) {
        const double x = gate[idx];
        const double gelu = 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
        out[idx] = static_cast<float>(gelu) * up[idx];
    }
}

}  // namespace tern::kernels::ref
