// AVX2 + FMA element-wise kernels (the KernelTable's rms_norm, silu_mul, gelu_mul and rope).
#pragma once

#include <cstdint>

namespace tern::kernels::avx2 {

void rms_norm(const float* x, const float* weight, int64_t length, float eps, float* out);
void silu_mul(const float* gate, const float* up, int64_t length, float* out);
void gelu_mul(const float* gate, const float* up, int64_t length, float* out);
void rope(float* head, int64_t rope_dim, const float* cos_table, const float* sin_table, bool pair_halves);

}  // namespace tern::kernels::avx2
