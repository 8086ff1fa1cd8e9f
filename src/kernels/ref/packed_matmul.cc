// Scalar oracles of the packed and row-major matmuls: the same arithmetic as the SIMD kernels (int8 dot products
// per 32-value block, d_w times each, d_a once per span of blocks that share it), written for reading.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <vector>

#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"

namespace tern::kernels::ref {
namespace {

// Weight value of lane `lane`, element `element` of a packed group-block.
int q4_0x16_value(const uint8_t* quants, int64_t lane, int element) {
    const int chunk = (element % 16) / 4;
    const uint8_t byte = quants[chunk * 64 + lane * 4 + element % 4];
    return element < 16 ? (byte & 0x0F) : (byte >> 4);  // unsigned nibble 0..15
}

int q8_0x16_value(const uint8_t* quants, int64_t lane, int element) {
    return quants[(element / 4) * 64 + lane * 4 + element % 4];  // w + 128, 0..255
}

// y[token][row] = row_dot(group, lane, token) for every row of groups [group_begin, group_end).
template <typename RowDotFn>
void for_each_packed_row(const PackedWeights& weights, int64_t num_tokens, int64_t group_begin, int64_t group_end,
                         float* y, int64_t y_stride, const RowDotFn& row_dot) {
    for (int64_t group_idx = group_begin; group_idx < group_end; ++group_idx) {
        const int64_t first_row = group_idx * kPackRows;
        for (int64_t token_idx = 0; token_idx < num_tokens; ++token_idx) {
            for (int64_t lane = 0; lane < kPackRows && first_row + lane < weights.view.num_rows; ++lane) {
                y[token_idx * y_stride + first_row + lane] = row_dot(weights.group(group_idx), lane, token_idx);
            }
        }
    }
}

// `offset` is what the stored unsigned value exceeds the signed weight by (8 for q4_0, 128 for q8_0), so
// dot - offset * sum(q) is the signed weights' integer dot. Per span of activation blocks sharing d_a:
//   partial = sum over the span's blocks of d_w * (dot - offset * sum(q)),  y += d_a * partial
template <typename ValueFn>
void matmul_packed(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                   int64_t group_end, float* y, int64_t y_stride, int64_t block_bytes, int32_t offset, ValueFn value) {
    const int64_t num_blocks = weights.view.row_length / 32;
    for_each_packed_row(weights, activations.num_tokens, group_begin, group_end, y, y_stride,
                        [&](const uint8_t* group, int64_t lane, int64_t token_idx) {
        const int8_t* q8 = activations.q8.data() + token_idx * activations.length;
        const float* scale = activations.scale.data() + token_idx * num_blocks;
        const int32_t* block_sum = activations.block_sum.data() + token_idx * num_blocks;
        float total = 0.0f;
        for (int64_t span_begin = 0; span_begin < num_blocks; span_begin += kBlocksPerScaleSpan) {
            float partial = 0.0f;
            for (int64_t block_idx = span_begin; block_idx < std::min(num_blocks, span_begin + kBlocksPerScaleSpan);
                 ++block_idx) {
                const uint8_t* block = group + block_idx * block_bytes;
                uint16_t d_bits = 0;
                std::memcpy(&d_bits, block + lane * 2, 2);
                int32_t dot = 0;
                for (int element = 0; element < 32; ++element) {
                    dot += value(block + 32, lane, element) * q8[block_idx * 32 + element];
                }
                partial = std::fma(fp16_to_fp32(d_bits), static_cast<float>(dot - offset * block_sum[block_idx]),
                                   partial);
            }
            total = std::fma(partial, scale[span_begin], total);
        }
        return total;
    });
}

}  // namespace

void matmul_q4_0x16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    matmul_packed(weights, activations, group_begin, group_end, y, y_stride, kQ4_0x16BlockBytes, 8, q4_0x16_value);
}

void matmul_q8_0x16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    matmul_packed(weights, activations, group_begin, group_end, y, y_stride, kQ8_0x16BlockBytes, 128,
                  q8_0x16_value);
}

namespace {

// Q6_Kx16: per 16-value sub-block an integer dot of the stored values with the activations, less 32 times the
// activations' sum (the bias of 32), scaled by the row's sub-block scale times d; the two sub-blocks of each
// 32-value activation block are summed, then scaled by that block's d_a.
int q6_kx16_value(const uint8_t* block32, int64_t lane, int element) {
    const int chunk = (element % 16) / 4, half = element / 16;
    const uint8_t top_bits = block32[256 + half * 64 + lane * 4 + element % 4];
    return q4_0x16_value(block32, lane, element) | ((top_bits >> (2 * chunk)) & 3) << 4;
}

float q6_kx16_dot(const uint8_t* group, int64_t num_super_blocks, int64_t lane, const int8_t* q8, const float* scale) {
    float total = 0.0f;
    for (int64_t super_idx = 0; super_idx < num_super_blocks; ++super_idx) {
        const uint8_t* block = group + super_idx * kQ6_Kx16BlockBytes;
        uint16_t d_bits = 0;
        std::memcpy(&d_bits, block + lane * 2, 2);
        const float d = fp16_to_fp32(d_bits);
        for (int block32 = 0; block32 < 8; ++block32) {
            const uint8_t* quants = block + kQ6_Kx16QuantsOffset + block32 * kQ6_Kx16BytesPer32;
            const int8_t* q = q8 + super_idx * 256 + block32 * 32;
            float part = 0.0f;
            for (int half = 0; half < 2; ++half) {
                int32_t dot = 0;
                for (int element = 16 * half; element < 16 * half + 16; ++element) {
                    dot += (q6_kx16_value(quants, lane, element) - 32) * q[element];
                }
                const int64_t sub_block = 2 * block32 + half;
                const int8_t sub_scale = static_cast<int8_t>(block[kQ6_Kx16ScalesOffset + sub_block * 16 + lane]);
                part = std::fma(static_cast<float>(dot), static_cast<float>(sub_scale) * d, part);
            }
            total = std::fma(part, scale[super_idx * 8 + block32], total);
        }
    }
    return total;
}

// Q4_Kx16: per 32-value sub-block j an integer dot of the 4-bit values with the activations, scaled by
// d * sc_j * d_a, less dmin * m_j times the activations' d_a * sum(q).
void q4_kx16_scales(const uint8_t* block, int64_t lane, uint8_t* scales, uint8_t* mins) {
    uint8_t packed[12];
    for (int word = 0; word < 3; ++word) {
        std::memcpy(packed + 4 * word, block + kQ4_Kx16ScaleWordsOffset + word * 64 + lane * 4, 4);
    }
    for (int sub_block = 0; sub_block < 8; ++sub_block) {
        unpack_scale_min_k4(sub_block, packed, &scales[sub_block], &mins[sub_block]);
    }
}

// Value `element` (0..31) of lane `lane` of a Q5_Kx16 sub-block: the Q4_Kx16 nibble and its fifth bit.
int q5_kx16_value(const uint8_t* sub_block, int64_t lane, int element) {
    const int nibble_chunk = (element % 16) / 4 + 4 * (element / 16);
    const int fifth = (sub_block[256 + lane * 4 + element % 4] >> nibble_chunk) & 1;
    return q4_0x16_value(sub_block, lane, element) | fifth << 4;
}

// Q4_Kx16 and Q5_Kx16 (kBlockBytes and kSubBlockBytes tell which; value reads one 4- or 5-bit value).
template <int64_t kBlockBytes, int64_t kSubBlockBytes, typename ValueFn>
float k_quant_x16_dot(const uint8_t* group, int64_t num_super_blocks, int64_t lane, const int8_t* q8,
                      const float* scale, const float* sum, ValueFn value) {
    float total = 0.0f;
    for (int64_t super_idx = 0; super_idx < num_super_blocks; ++super_idx) {
        const uint8_t* block = group + super_idx * kBlockBytes;
        uint16_t d_bits = 0, dmin_bits = 0;
        std::memcpy(&d_bits, block + lane * 2, 2);
        std::memcpy(&dmin_bits, block + kQ4_Kx16MinScalesOffset + lane * 2, 2);
        uint8_t scales[8], mins[8];
        q4_kx16_scales(block, lane, scales, mins);
        for (int sub_block = 0; sub_block < 8; ++sub_block) {
            const uint8_t* quants = block + kQ4_Kx16QuantsOffset + sub_block * kSubBlockBytes;
            const int64_t act_block = super_idx * 8 + sub_block;
            int32_t dot = 0;
            for (int element = 0; element < 32; ++element) {
                dot += value(quants, lane, element) * q8[act_block * 32 + element];
            }
            const float term = static_cast<float>(dot) * scale[act_block];
            total = std::fma(fp16_to_fp32(d_bits) * static_cast<float>(scales[sub_block]), term, total);
            total = std::fma(-fp16_to_fp32(dmin_bits) * static_cast<float>(mins[sub_block]), sum[act_block], total);
        }
    }
    return total;
}

template <int64_t kBlockBytes, int64_t kSubBlockBytes, typename ValueFn>
void matmul_k_quant_x16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                        int64_t group_end, float* y, int64_t y_stride, ValueFn value) {
    const int64_t num_super_blocks = weights.view.row_length / 256;
    for_each_packed_row(weights, activations.num_tokens, group_begin, group_end, y, y_stride,
                        [&](const uint8_t* group, int64_t lane, int64_t token_idx) {
        const int64_t first_block = token_idx * activations.num_blocks();
        return k_quant_x16_dot<kBlockBytes, kSubBlockBytes>(
            group, num_super_blocks, lane, activations.q8.data() + token_idx * activations.length,
            activations.scale.data() + first_block, activations.sum.data() + first_block, value);
    });
}

}  // namespace

void matmul_q6_kx16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    const int64_t num_super_blocks = weights.view.row_length / 256;
    for_each_packed_row(weights, activations.num_tokens, group_begin, group_end, y, y_stride,
                        [&](const uint8_t* group, int64_t lane, int64_t token_idx) {
        return q6_kx16_dot(group, num_super_blocks, lane, activations.q8.data() + token_idx * activations.length,
                           activations.scale.data() + token_idx * activations.num_blocks());
    });
}

void matmul_q4_kx16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    matmul_k_quant_x16<kQ4_Kx16BlockBytes, kQ4_Kx16BytesPerSubBlock>(weights, activations, group_begin, group_end, y,
                                                                     y_stride, q4_0x16_value);
}

void matmul_q5_kx16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    matmul_k_quant_x16<kQ5_Kx16BlockBytes, kQ5_Kx16BytesPerSubBlock>(weights, activations, group_begin, group_end, y,
                                                                     y_stride, q5_kx16_value);
}

void matmul_f32(const MatrixView& weights, const Activations& activations, int64_t row_begin, int64_t row_end,
                float* y, int64_t y_stride) {
    matmul_rows(weights, row_begin, row_end, activations.f32, activations.f32_stride, activations.num_tokens, y,
                y_stride, nullptr);
}

namespace {

// Row-major 16-bit float weights (F16 or BF16), each element widened by `widen`.
template <float (*widen)(uint16_t)>
void matmul_half(const MatrixView& weights, const Activations& activations, int64_t row_begin, int64_t row_end,
                 float* y, int64_t y_stride) {
    for (int64_t row_idx = row_begin; row_idx < row_end; ++row_idx) {
        const uint16_t* row = reinterpret_cast<const uint16_t*>(weights.row(row_idx));
        for (int64_t token_idx = 0; token_idx < activations.num_tokens; ++token_idx) {
            const float* x = activations.f32 + token_idx * activations.f32_stride;
            float sum = 0.0f;
            for (int64_t idx = 0; idx < weights.row_length; ++idx) sum += widen(row[idx]) * x[idx];
            y[token_idx * y_stride + row_idx] = sum;
        }
    }
}

}  // namespace

void matmul_f16(const MatrixView& weights, const Activations& activations, int64_t row_begin, int64_t row_end,
                float* y, int64_t y_stride) {
    matmul_half<fp16_to_fp32>(weights, activations, row_begin, row_end, y, y_stride);
}

void matmul_bf16(const MatrixView& weights, const Activations& activations, int64_t row_begin, int64_t row_end,
                 float* y, int64_t y_stride) {
    matmul_half<bf16_to_fp32>(weights, activations, row_begin, row_end, y, y_stride);
}

void matmul_dequantized_q8(DType type, const MatrixView& weights, const Activations& activations, int64_t row_begin,
                           int64_t row_end, float* y, int64_t y_stride) {
    thread_local std::vector<float> row;  // grows once per thread, then reused
    row.resize(static_cast<size_t>(weights.row_length));
    for (int64_t row_idx = row_begin; row_idx < row_end; ++row_idx) {
        dequantize_row(type, weights.row(row_idx), row.data(), weights.row_length);
        for (int64_t token_idx = 0; token_idx < activations.num_tokens; ++token_idx) {
            const int8_t* q = activations.q8.data() + token_idx * activations.length;
            const float* scale = activations.scale.data() + token_idx * activations.num_blocks();
            double sum = 0.0;
            for (int64_t idx = 0; idx < weights.row_length; ++idx) {
                sum += static_cast<double>(row[static_cast<size_t>(idx)]) * scale[idx / 32] * q[idx];
            }
            y[token_idx * y_stride + row_idx] = static_cast<float>(sum);
        }
    }
}

void quantize_activations(const float* x, int64_t length, int8_t* q, float* scale, float* sum, int32_t* block_sum) {
    const int64_t num_blocks = length / 32;
    for (int64_t span_begin = 0; span_begin < num_blocks; span_begin += kBlocksPerScaleSpan) {
        const int64_t span_end = std::min(num_blocks, span_begin + kBlocksPerScaleSpan);
        float max_abs = 0.0f;
        for (int64_t idx = span_begin * 32; idx < span_end * 32; ++idx) max_abs = std::max(max_abs, std::fabs(x[idx]));
        const float d = max_abs / 127.0f;
        const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
        for (int64_t block_idx = span_begin; block_idx < span_end; ++block_idx) {
            int32_t total = 0;
            for (int64_t idx = block_idx * 32; idx < block_idx * 32 + 32; ++idx) {
                // Round half to even, as the SIMD conversion does.
                const int32_t value = static_cast<int32_t>(std::nearbyint(x[idx] * inverse));
                q[idx] = static_cast<int8_t>(value);
                total += value;
            }
            scale[block_idx] = d;
            sum[block_idx] = d * static_cast<float>(total);
            block_sum[block_idx] = total;
        }
    }
}

double sum_f32(const float* x, int64_t length) {
    double total = 0.0;
    for (int64_t idx = 0; idx < length; ++idx) total += x[idx];
    return total;
}

}  // namespace tern::kernels::ref
