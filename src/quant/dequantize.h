// Scalar reference dequantization: bit-exact with ggml's dequantize_row_* (same float operations in the same
// order, no fused multiply-add). Fast paths elsewhere are tested against these.
#pragma once

#include <cstdint>

#include "quant/blocks.h"
#include "tensor/dtype.h"

namespace tern {

// True for every type dequantize_row accepts (the same set as dtype_traits(type).can_dequantize).
bool can_dequantize(DType type);

// Converts `num_elements` values of `type` at `src` to floats. num_elements must be a multiple of the type's block
// size, `type` must satisfy can_dequantize, and `src` must be aligned to 2 bytes (GGUF data always is).
void dequantize_row(DType type, const void* src, float* dst, int64_t num_elements);

// Per-type entry points; `num_elements` is a multiple of the block size.
void dequantize_row_f16(const uint16_t* src, float* dst, int64_t num_elements);
void dequantize_row_bf16(const uint16_t* src, float* dst, int64_t num_elements);
void dequantize_row_q4_0(const BlockQ4_0* src, float* dst, int64_t num_elements);
void dequantize_row_q4_1(const BlockQ4_1* src, float* dst, int64_t num_elements);
void dequantize_row_q5_0(const BlockQ5_0* src, float* dst, int64_t num_elements);
void dequantize_row_q5_1(const BlockQ5_1* src, float* dst, int64_t num_elements);
void dequantize_row_q8_0(const BlockQ8_0* src, float* dst, int64_t num_elements);
void dequantize_row_q4_k(const BlockQ4_K* src, float* dst, int64_t num_elements);
void dequantize_row_q5_k(const BlockQ5_K* src, float* dst, int64_t num_elements);
void dequantize_row_q6_k(const BlockQ6_K* src, float* dst, int64_t num_elements);

}  // namespace tern
