// AVX-512 VNNI matmuls of the repacked Q4_0x16 / Q8_0x16 / Q6_Kx16 weights (kernels/packed_weights.h) with 8-bit activations.
#pragma once

#include <cstdint>

#include "kernels/activations.h"
#include "kernels/packed_weights.h"

namespace tern::kernels::avx512 {

void matmul_q4_0x16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride);
void matmul_q8_0x16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride);
void matmul_q4_kx16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride);
void matmul_q5_kx16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride);
void matmul_q6_kx16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride);

}  // namespace tern::kernels::avx512
