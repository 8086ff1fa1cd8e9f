#include "plan/weight_footprint.h"

#include <cmath>
#include <string>

#include "synth/synth.h"

namespace tern::plan {
namespace {

struct Accumulator {
    WeightFootprint footprint;

    void matrix(int64_t row_length, int64_t num_rows, bool is_output, bool streamed) {
        const DType type = synth_tensor_type(footprint.type, row_length, is_output);
        add(row_length * num_rows, row_bytes(type, row_length) * num_rows, streamed);
    }
    void f32_vector(int64_t length) { add(length, length * 4, true); }
    void add(int64_t params, int64_t bytes, bool streamed) {
        footprint.num_params += params;
        footprint.bytes += bytes;
        if (streamed) footprint.matmul_params += params, footprint.matmul_bytes += bytes;
    }
};

}  // namespace

WeightFootprint weight_footprint(const ModelShape& shape, DType type) {
    Accumulator acc;
    acc.footprint.type = type;
    const int64_t dim = shape.embedding_dim;
    // An untied embedding table is only looked up (a few rows per step); a tied one is also the output matrix.
    acc.matrix(dim, shape.vocab_size, shape.tied_embeddings, shape.tied_embeddings);
    acc.f32_vector(dim);  // output_norm
    if (!shape.tied_embeddings) acc.matrix(dim, shape.vocab_size, true, true);
    for (int idx = 0; idx < shape.rope_factor_tensors; ++idx) acc.f32_vector(shape.head_dim / 2);
    for (int64_t layer_idx = 0; layer_idx < shape.num_layers; ++layer_idx) {
        acc.f32_vector(dim);  // attn_norm
        acc.matrix(dim, shape.q_dim(), false, true);
        acc.matrix(dim, shape.kv_dim(), false, true);
        acc.matrix(dim, shape.kv_dim(), false, true);
        if (shape.qkv_bias) acc.f32_vector(shape.q_dim() + 2 * shape.kv_dim());
        const std::string& arch = shape.architecture;
        if (arch == "qwen3" || arch == "qwen3moe" || arch == "gemma3") acc.f32_vector(2 * shape.head_dim);
        acc.matrix(shape.q_dim(), dim, false, true);
        acc.f32_vector(dim);  // ffn_norm
        if (arch == "gemma2" || arch == "gemma3") acc.f32_vector(2 * dim);  // the post-norms
        if (shape.num_experts > 0) {
            acc.matrix(dim, shape.num_experts, false, true);  // the router
            // Every expert is held; one token's step reads num_experts_used of them.
            for (int64_t expert = 0; expert < shape.num_experts; ++expert) {
                const bool read = expert < shape.num_experts_used;
                acc.matrix(dim, shape.expert_ffn_dim, false, read);
                acc.matrix(dim, shape.expert_ffn_dim, false, read);
                acc.matrix(shape.expert_ffn_dim, dim, false, read);
            }
            if (shape.shared_expert_ffn_dim > 0) {
                acc.f32_vector(dim);  // its gate
                acc.matrix(dim, shape.shared_expert_ffn_dim, false, true);
                acc.matrix(dim, shape.shared_expert_ffn_dim, false, true);
                acc.matrix(shape.shared_expert_ffn_dim, dim, false, true);
            }
            continue;
        }
        acc.matrix(dim, shape.ffn_dim, false, true);
        acc.matrix(dim, shape.ffn_dim, false, true);
        acc.matrix(shape.ffn_dim, dim, false, true);
    }
    return acc.footprint;
}

WeightFootprint file_weight_footprint(const ModelShape& shape) {
    WeightFootprint footprint;
    footprint.type = shape.file_weight_type.value_or(DType::kF16);
    footprint.from_file = true;
    footprint.num_params = shape.file_num_params.value_or(0);
    footprint.bytes = shape.file_weight_bytes.value_or(0);
    footprint.matmul_params = shape.file_matmul_params.value_or(0);
    footprint.matmul_bytes = shape.file_matmul_bytes.value_or(0);
    return footprint;
}

WeightFootprint with_total_bytes(const WeightFootprint& footprint, int64_t bytes) {
    WeightFootprint scaled = footprint;
    const double share = footprint.bytes > 0 ? static_cast<double>(footprint.matmul_bytes) / footprint.bytes : 1.0;
    scaled.bytes = bytes;
    scaled.matmul_bytes = static_cast<int64_t>(std::llround(share * static_cast<double>(bytes)));
    return scaled;
}

bool is_integer_quantized(DType type) {
    switch (type) {
        case DType::kF32:
        case DType::kF16:
        case DType::kBF16:
        case DType::kF64:
        case DType::kI8:
        case DType::kI16:
        case DType::kI32:
        case DType::kI64:
            return false;
        default:
            return true;
    }
}

bool is_plannable_weight_type(DType type) {
    switch (type) {
        case DType::kF32:
        case DType::kF16:
        case DType::kBF16:
        case DType::kQ4_0:
        case DType::kQ4_1:
        case DType::kQ5_0:
        case DType::kQ5_1:
        case DType::kQ8_0:
        case DType::kQ2_K:
        case DType::kQ3_K:
        case DType::kQ4_K:
        case DType::kQ5_K:
        case DType::kQ6_K:
            return true;
        default:
            return false;
    }
}

}  // namespace tern::plan
