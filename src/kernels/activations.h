// Activations prepared once per matmul input and shared by every matmul that reads it (q/k/v, gate/up):
// the f32 rows as given, plus, for integer dot products, each row quantized to 8-bit blocks of 32.
//
//   q8[t * length + i]        int8 value i of token t        (x ≈ d * q)
//   scale[t * blocks + b]     d of block b's span            (max |x| / 127 over the span)
//   sum[t * blocks + b]       d * Σ q over the block         (what zero-point offsets of weights multiply)
//   block_sum[t * blocks + b] Σ q over the block, exactly
//
// One d serves a span of kActivationScaleSpan values (8 blocks; a row's last span may be shorter), as llama.cpp's
// Q8_K does for its K-quant dot products: the Q4_0 / Q8_0 kernels then add d_w * (integer dot) per block and apply
// d once per span, one multiply-add per block where a scale per block needs two. On Zen 4 vpdpbusd shares its two
// pipes with the multiply-adds, so that is 10-16% more batched matmul throughput (docs/perf/kernels.md).
#pragma once

#include <cstdint>
#include <vector>

namespace tern::kernels {

struct KernelTable;

constexpr int64_t kActivationBlock = 32;
constexpr int64_t kActivationScaleSpan = 256;
constexpr int64_t kBlocksPerScaleSpan = kActivationScaleSpan / kActivationBlock;

struct Activations {
    const float* f32 = nullptr;  // num_tokens rows, `f32_stride` floats apart (not owned)
    int64_t f32_stride = 0;
    int64_t num_tokens = 0;
    int64_t length = 0;
    bool has_q8 = false;
    std::vector<int8_t> q8;
    std::vector<float> scale;
    std::vector<float> sum;
    std::vector<int32_t> block_sum;
    // Unique to each reserve_activations call across all Activations, so that what a kernel derives from one input
    // (reordered scales, Q6_K biases) can be kept per thread and reused by the next range of the same input.
    uint64_t generation = 0;

    int64_t num_blocks() const { return length / kActivationBlock; }
    int64_t num_scale_spans() const { return (length + kActivationScaleSpan - 1) / kActivationScaleSpan; }
};

// Points `out` at `x` and, when `quantize` is set (length must then be a multiple of 32), fills the 8-bit
// copy. Buffers grow to the largest input seen and are reused.
// The 8-bit values of an input of n tokens interleaved for the streamed batched-decode kernels: per 32-value block
// and 4-value chunk k, the n tokens' 4 bytes side by side,
//   interleaved[(block * 8 + k) * 4n + 4t + i] = q8[t * length + 32 * block + 4k + i],
// so that a kernel reads every token's bytes from one pointer at constant offsets (not one pointer per token), and
// the rows it reads together never lie a multiple of 4 KiB apart (with rows of 4096 values, 16 tokens' bytes at
// one offset all map to one L1 set). Per calling thread, kept until the next input, like q6_k_sub_block_biases.
const std::vector<int8_t>& interleaved_q8(const Activations& activations);

void prepare_activations(const KernelTable& table, const float* x, int64_t num_tokens, int64_t length, int64_t stride,
                         bool quantize, Activations* out);

// prepare_activations in two steps, so that threads can quantize disjoint token ranges of one input at once:
// reserve_activations points `out` at `x` and sizes its buffers; quantize_activation_rows fills tokens
// [token_begin, token_end) (a no-op unless `quantize` was set).
void reserve_activations(const float* x, int64_t num_tokens, int64_t length, int64_t stride, bool quantize,
                         Activations* out);
void quantize_activation_rows(const KernelTable& table, int64_t token_begin, int64_t token_end, Activations* out);

// -32 times the sum of each 16-value run of each token's 8-bit values, bias[token * (length / 16) + run]: where the
// Q6_K kernels start each sub-block's integer sum (ggml stores Q6_K values biased by 32). Computed for the calling
// thread into storage of its own, which grows to the largest input and is reused.
const std::vector<int32_t>& q6_k_sub_block_biases(const Activations& activations);

// The block sums of each token's 256-value spans as 16-bit pairs, four 32-bit words per span,
//   pairs[(token * spans + span) * 4 + i] = (s[l] & 0xFFFF) | s[l + 2] << 16,   l = 4 * (i / 2) + i % 2
// with s the span's 8 block sums: (s0, s2), (s1, s3), (s4, s6), (s5, s7), the order in which the K-quant kernels
// hold their 6-bit mins, so that vpdpwssd adds sum over j of m_j * s_j exactly (|s| <= 32 * 127 fits 16 bits).
// Length a multiple of 256. Per calling thread, kept until the next input, like q6_k_sub_block_biases.
const std::vector<int32_t>& k_quant_block_sum_pairs(const Activations& activations);

}  // namespace tern::kernels
