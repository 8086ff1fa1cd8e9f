// The kernel dispatch table: one set of function pointers per instruction set, chosen once at start from CPUID
// (or TERN_ISA) and read-only afterwards. Every entry has a scalar reference in kernels/ref that tests compare
// each ISA's version against. Kernels are single-threaded; callers split work units across threads.
#pragma once

#include <cstdint>

#include "kernels/activations.h"
#include "kernels/attention_scoring.h"
#include "kernels/cpu_features.h"
#include "kernels/packed_weights.h"
#include "kernels/paged_kv.h"

namespace tern::kernels {

// y[t * y_stride + r] = dot(W row r, activations of token t) for the rows of groups [group_begin, group_end).
using PackedMatmulFn = void (*)(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                                int64_t group_end, float* y, int64_t y_stride);
// The same for row-major float weights, rows [row_begin, row_end).
using RowMatmulFn = void (*)(const MatrixView& weights, const Activations& activations, int64_t row_begin,
                             int64_t row_end, float* y, int64_t y_stride);
// Causal attention of `num_heads` query heads that share one KV head (grouped-query attention) over the first
// `num_keys` cached positions of `kv` (the last scoring.window of them, when set):
// out_h = softmax(score(q_h, k_j)) . v_j. Head h's query is at q + h * q_stride and its output at
// out + h * out_stride. `scratch` holds num_keys + 2 * head_dim floats.
using AttentionFn = void (*)(const float* q, int64_t q_stride, int64_t num_heads, const PagedKv& kv, int64_t num_keys,
                             int64_t head_dim, const AttentionScoring& scoring, float* out, int64_t out_stride,
                             float* scratch);
// out = x / sqrt(mean(x^2) + eps) * weight, over `length` floats.
using RmsNormFn = void (*)(const float* x, const float* weight, int64_t length, float eps, float* out);
// Rotates the first `rope_dim` elements of one head in place by the angles whose cos/sin are given per pair:
// adjacent pairs (x[2i], x[2i+1]) or, with pair_halves (NeoX order), halves (x[i], x[i + rope_dim/2]).
using RopeFn = void (*)(float* head, int64_t rope_dim, const float* cos_table, const float* sin_table,
                        bool pair_halves);
// Consecutive query tokens of one sequence (a prefill chunk), each with the query heads that share one KV head:
// query i's head h is at q + i * q_token_stride + h * q_head_stride, attends to the first first_num_keys + i
// cached positions, and writes out + i * out_token_stride + h * out_head_stride.
struct AttentionQueries {
    const float* q;
    int64_t q_token_stride;
    int64_t q_head_stride;
    int64_t num_heads;
    int64_t num_queries;
    int64_t first_num_keys;
    float* out;
    int64_t out_token_stride;
    int64_t out_head_stride;
};
// Gives each query exactly what AttentionFn gives it alone (the same bits), so results do not depend on how a
// prompt is chunked; a kernel may share each key tile's conversion and loads among the queries.
using AttentionQueriesFn = void (*)(const AttentionQueries& queries, const PagedKv& kv, int64_t head_dim,
                                    const AttentionScoring& scoring, float* scratch);
// out[i] = silu(gate[i]) * up[i] (SwiGLU); out may alias gate.
using SiluMulFn = void (*)(const float* gate, const float* up, int64_t length, float* out);
// out[i] = gelu(gate[i]) * up[i] (GeGLU, Gemma), GELU in its tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// as Gemma was trained with (Hugging Face's gelu_pytorch_tanh); out may alias gate.
using GeluMulFn = void (*)(const float* gate, const float* up, int64_t length, float* out);
// Sum of `length` floats; streams memory as fast as the core can (the read-bandwidth probe of `tern bench memory`).
using SumFn = double (*)(const float* x, int64_t length);
// A compute-ceiling probe: `iterations` x kPeakChains independent vector instructions; returns a value that
// depends on every result, so none is optimised away.
using PeakLoopFn = double (*)(int64_t iterations);
constexpr int kPeakChains = 16;
// Quantizes `length` floats (a multiple of 32) to 8-bit blocks of 32 whose scale d is shared by each span of
// kActivationScaleSpan values (kernels/activations.h): q, d per block (repeated across its span), d * sum(q) and
// sum(q) per block.
using QuantizeActivationsFn = void (*)(const float* x, int64_t length, int8_t* q, float* scale, float* sum,
                                       int32_t* block_sum);

struct KernelTable {
    Isa isa = Isa::kRef;
    PackedMatmulFn matmul_q4_0x16 = nullptr;
    PackedMatmulFn matmul_q8_0x16 = nullptr;
    PackedMatmulFn matmul_q6_kx16 = nullptr;
    PackedMatmulFn matmul_q4_kx16 = nullptr;
    PackedMatmulFn matmul_q5_kx16 = nullptr;
    RowMatmulFn matmul_f32 = nullptr;
    RowMatmulFn matmul_f16 = nullptr;
    RowMatmulFn matmul_bf16 = nullptr;
    QuantizeActivationsFn quantize_activations = nullptr;
    SumFn sum_f32 = nullptr;
    AttentionFn attention_group = nullptr;
    AttentionQueriesFn attention_queries = nullptr;
    RmsNormFn rms_norm = nullptr;
    SiluMulFn silu_mul = nullptr;
    GeluMulFn gelu_mul = nullptr;
    RopeFn rope = nullptr;
    // Peak probes (nullptr where the ISA has no such instruction): int8 dot products do int8_ops_per_instruction
    // operations (a multiply-add counts 2) per instruction, fp32 FMAs fp32_flops_per_instruction.
    PeakLoopFn int8_dot_peak_loop = nullptr;
    PeakLoopFn fp32_fma_peak_loop = nullptr;
    int int8_ops_per_instruction = 0;
    int fp32_flops_per_instruction = 0;
};

// The table in use: the best this CPU supports, or TERN_ISA's choice. Logged once at first use.
const KernelTable& kernels();
// The table for `isa`, or nullptr when this build or CPU cannot run it (tests iterate over all ISAs).
const KernelTable* kernel_table(Isa isa);

// AttentionQueriesFn as one kSingle call per query (the kernel sets without a multi-query kernel).
template <AttentionFn kSingle>
void attend_each_query(const AttentionQueries& queries, const PagedKv& kv, int64_t head_dim,
                       const AttentionScoring& scoring, float* scratch) {
    for (int64_t query = 0; query < queries.num_queries; ++query) {
        kSingle(queries.q + query * queries.q_token_stride, queries.q_head_stride, queries.num_heads, kv,
                queries.first_num_keys + query, head_dim, scoring, queries.out + query * queries.out_token_stride,
                queries.out_head_stride, scratch);
    }
}

// Whether matmul with these weights reads the 8-bit activations.
inline bool needs_q8_activations(const PackedWeights& weights) {
    const DType type = weights.view.type;
    return weights.layout != WeightLayout::kRowMajor || type == DType::kQ6_K || type == DType::kQ4_K ||
           type == DType::kQ5_K;
}

// Dispatches on the weights' layout and type. `scratch` holds weights.view.row_length floats (for types that are
// dequantized row by row).
void matmul(const KernelTable& table, const PackedWeights& weights, const Activations& activations,
            int64_t unit_begin, int64_t unit_end, float* y, int64_t y_stride, float* scratch);

namespace ref {
void matmul_q4_0x16(const PackedWeights&, const Activations&, int64_t, int64_t, float*, int64_t);
void matmul_q8_0x16(const PackedWeights&, const Activations&, int64_t, int64_t, float*, int64_t);
void matmul_q6_kx16(const PackedWeights&, const Activations&, int64_t, int64_t, float*, int64_t);
void matmul_q4_kx16(const PackedWeights&, const Activations&, int64_t, int64_t, float*, int64_t);
void matmul_q5_kx16(const PackedWeights&, const Activations&, int64_t, int64_t, float*, int64_t);
void matmul_f32(const MatrixView&, const Activations&, int64_t, int64_t, float*, int64_t);
void matmul_f16(const MatrixView&, const Activations&, int64_t, int64_t, float*, int64_t);
void matmul_bf16(const MatrixView&, const Activations&, int64_t, int64_t, float*, int64_t);
// Row-major Q4_K / Q5_K / Q6_K (met only without repacking): each row dequantized, dotted in double with the
// 8-bit activations.
void matmul_dequantized_q8(DType type, const MatrixView&, const Activations&, int64_t, int64_t, float*, int64_t);
void quantize_activations(const float* x, int64_t length, int8_t* q, float* scale, float* sum, int32_t* block_sum);
double sum_f32(const float* x, int64_t length);
void attention_group(const float* q, int64_t q_stride, int64_t num_heads, const PagedKv& kv, int64_t num_keys,
                     int64_t head_dim, const AttentionScoring& scoring, float* out, int64_t out_stride,
                     float* scratch);
}  // namespace ref

namespace avx512 {
const KernelTable* table();  // nullptr when not compiled in
double int8_dot_peak_loop(int64_t iterations);
double fp32_fma_peak_loop(int64_t iterations);
void rms_norm(const float* x, const float* weight, int64_t length, float eps, float* out);
void silu_mul(const float* gate, const float* up, int64_t length, float* out);
void gelu_mul(const float* gate, const float* up, int64_t length, float* out);
void rope(float* head, int64_t rope_dim, const float* cos_table, const float* sin_table, bool pair_halves);
void attention_group(const float* q, int64_t q_stride, int64_t num_heads, const PagedKv& kv, int64_t num_keys,
                     int64_t head_dim, const AttentionScoring& scoring, float* out, int64_t out_stride,
                     float* scratch);
void attention_queries(const AttentionQueries& queries, const PagedKv& kv, int64_t head_dim,
                       const AttentionScoring& scoring, float* scratch);
}
namespace avx2 {
const KernelTable* table();
void matmul_q4_kx16(const PackedWeights&, const Activations&, int64_t, int64_t, float*, int64_t);
void matmul_q5_kx16(const PackedWeights&, const Activations&, int64_t, int64_t, float*, int64_t);
void matmul_q6_kx16(const PackedWeights&, const Activations&, int64_t, int64_t, float*, int64_t);
void attention_group(const float* q, int64_t q_stride, int64_t num_heads, const PagedKv& kv, int64_t num_keys,
                     int64_t head_dim, const AttentionScoring& scoring, float* out, int64_t out_stride,
                     float* scratch);
}

}  // namespace tern::kernels
