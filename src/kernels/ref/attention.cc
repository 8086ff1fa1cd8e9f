#include <cmath>
#include <cstring>
#include <limits>

#include "base/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"

namespace tern::kernels {

void load_kv_row(KvType type, const uint8_t* row, int64_t head_dim, float* out) {
    switch (type) {
        case KvType::kF32:
            std::memcpy(out, row, static_cast<size_t>(head_dim) * sizeof(float));
            return;
        case KvType::kF16:
            for (int64_t idx = 0; idx < head_dim; ++idx) {
                uint16_t bits;
                std::memcpy(&bits, row + 2 * idx, sizeof(bits));
                out[idx] = fp16_to_fp32(bits);
            }
            return;
        case KvType::kQ8_0:
            for (int64_t block = 0; block < head_dim / 32; ++block) {
                const uint8_t* block_bytes = row + 34 * block;
                uint16_t scale_bits;
                std::memcpy(&scale_bits, block_bytes, sizeof(scale_bits));
                const float scale = fp16_to_fp32(scale_bits);
                const auto* quants = reinterpret_cast<const int8_t*>(block_bytes + 2);
                for (int idx = 0; idx < 32; ++idx) out[32 * block + idx] = scale * static_cast<float>(quants[idx]);
            }
            return;
    }
}

namespace ref {

void attention_head(const float* q, const PagedKv& kv, int64_t num_keys, int64_t head_dim,
                    const AttentionScoring& scoring, float* scratch, float* out) {
    const int64_t first_key = scoring.first_key(num_keys);
    float* scores = scratch;  // scores[key_idx - first_key]
    float* row = scratch + num_keys;
    float max_score = -std::numeric_limits<float>::infinity();
    for (int64_t key_idx = first_key; key_idx < num_keys; ++key_idx) {
        load_kv_row(kv.type, kv.key_row(key_idx), head_dim, row);
        float dot = 0.0f;
        for (int64_t dim_idx = 0; dim_idx < head_dim; ++dim_idx) dot += q[dim_idx] * row[dim_idx];
        float score = dot * scoring.scale;
        if (scoring.softcap > 0.0f) score = scoring.softcap * std::tanh(score / scoring.softcap);
        scores[key_idx - first_key] = score;
        if (score > max_score) max_score = score;
    }
    double total = 0.0;
    for (int64_t key_idx = first_key; key_idx < num_keys; ++key_idx) {
        float& score = scores[key_idx - first_key];
        score = std::exp(score - max_score);
        total += score;
    }
    const float inv_total = static_cast<float>(1.0 / total);
    for (int64_t dim_idx = 0; dim_idx < head_dim; ++dim_idx) out[dim_idx] = 0.0f;
    for (int64_t key_idx = first_key; key_idx < num_keys; ++key_idx) {
        const float weight = scores[key_idx - first_key] * inv_total;
        load_kv_row(kv.type, kv.value_row(key_idx), head_dim, row);
        for (int64_t dim_idx = 0; dim_idx < head_dim; ++dim_idx) out[dim_idx] += weight * row[dim_idx];
    }
}

void attention_group(const float* q, int64_t q_stride, int64_t num_heads, const PagedKv& kv, int64_t num_keys,
                     int64_t head_dim, const AttentionScoring& scoring, float* out, int64_t out_stride,
                     float* scratch) {
    for (int64_t head = 0; head < num_heads; ++head) {
        attention_head(q + head * q_stride, kv, num_keys, head_dim, scoring, scratch, out + head * out_stride);
    }
}

}  // namespace ref
}  // namespace tern::kernels
