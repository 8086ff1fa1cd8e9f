// Scalar reference kernels: readable, no intrinsics, the oracle that SIMD variants are tested against.
// Kernels are single-threaded and take raw pointers and shapes; callers split work across threads.
#pragma once

#include <cstdint>

#include "kernels/paged_kv.h"
#include "kernels/attention_scoring.h"
#include "tensor/matrix_view.h"

namespace tern::kernels::ref {

// For each of `num_tokens` activation rows x[t] (length weights.row_length, `x_stride` floats apart) and each
// weight row r in [row_begin, row_end): y[t * y_stride + r] = dot(x[t], W[r]).
// `row_scratch` holds weights.row_length floats (dequantized rows land there).
void matmul_rows(const MatrixView& weights, int64_t row_begin, int64_t row_end, const float* x, int64_t x_stride,
                 int64_t num_tokens, float* y, int64_t y_stride, float* row_scratch);

// out = x / sqrt(mean(x^2) + eps) * weight.
void rms_norm(const float* x, const float* weight, int64_t length, float eps, float* out);

// Rotates the first `rope_dim` elements of one head by the angles whose cos/sin are given per pair.
// Adjacent pairs (x[2i], x[2i+1]) or halves (x[i], x[i + rope_dim/2]).
void rope(float* head, int64_t rope_dim, const float* cos_table, const float* sin_table, bool pair_halves);

// out[i] = silu(gate[i]) * up[i].
void silu_mul(const float* gate, const float* up, int64_t length, float* out);
// out[i] = gelu_tanh(gate[i]) * up[i].
void gelu_mul(const float* gate, const float* up, int64_t length, float* out);

// Causal attention of one query head over the first `num_keys` positions of `kv` (the last scoring.window):
// out = softmax(score(q, k_j)) . v_j (kernels.h's AttentionScoring). scratch holds num_keys + head_dim floats.
void attention_head(const float* q, const PagedKv& kv, int64_t num_keys, int64_t head_dim,
                    const AttentionScoring& scoring, float* scratch, float* out);

}  // namespace tern::kernels::ref
