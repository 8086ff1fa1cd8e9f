// Reference quantization, matching ggml's quantize_row_*_ref (the deterministic path llama-quantize takes without
// an importance matrix), so tern writes the same bytes llama.cpp would for the same floats.
#pragma once

#include <cstdint>

#include "quant/blocks.h"
#include "tensor/dtype.h"

namespace tern {

// True for F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K.
bool can_quantize(DType type);

// Converts `num_elements` floats to `type` at `dst`, which receives row_bytes(type, num_elements) bytes.
// num_elements must be a multiple of the block size, `type` must satisfy can_quantize, `dst` must be 2-byte
// aligned and the inputs finite (as in ggml, NaN and infinity are not handled).
// Blocks are independent, so any split of a row into whole blocks gives the same bytes.
void quantize_row(DType type, const float* src, void* dst, int64_t num_elements);

// Quantizes `num_rows` contiguous rows of `row_length` floats into contiguous quantized rows; returns the bytes
// written (num_rows * row_bytes(type, row_length)).
int64_t quantize_rows(DType type, const float* src, void* dst, int64_t num_rows, int64_t row_length);

// Per-type entry points; `num_elements` is a multiple of the block size.
void quantize_row_f16(const float* src, uint16_t* dst, int64_t num_elements);
void quantize_row_bf16(const float* src, uint16_t* dst, int64_t num_elements);
void quantize_row_q4_0(const float* src, BlockQ4_0* dst, int64_t num_elements);
void quantize_row_q4_1(const float* src, BlockQ4_1* dst, int64_t num_elements);
void quantize_row_q5_0(const float* src, BlockQ5_0* dst, int64_t num_elements);
void quantize_row_q5_1(const float* src, BlockQ5_1* dst, int64_t num_elements);
void quantize_row_q8_0(const float* src, BlockQ8_0* dst, int64_t num_elements);
void quantize_row_q4_k(const float* src, BlockQ4_K* dst, int64_t num_elements);
void quantize_row_q5_k(const float* src, BlockQ5_K* dst, int64_t num_elements);
void quantize_row_q6_k(const float* src, BlockQ6_K* dst, int64_t num_elements);

}  // namespace tern
