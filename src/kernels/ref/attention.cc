#include <cmath>
#include <limits>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"

namespace tern::kernels::ref {

void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride, int64_t num_keys,
                    int64_t head_dim, float scale, float* scores, float* out) {
    float max_score = -std::numeric_limits<float>::infinity();
    for (int64_t key_idx = 0; key_idx < num_keys; ++key_idx) {
        const float* key = k + key_idx * kv_stride;
        float dot = 0.0f;
        for (int64_t dim_idx = 0; dim_idx < head_dim; ++dim_idx) dot += q[dim_idx] * key[dim_idx];
        scores[key_idx] = dot * scale;
        if (scores[key_idx] > max_score) max_score = scores[key_idx];
    }
    double total = 0.0;
    for (int64_t key_idx = 0; key_idx < num_keys; ++key_idx) {
        scores[key_idx] = std::exp(scores[key_idx] - max_score);
        total += scores[key_idx];
    }
    const float inv_total = static_cast<float>(1.0 / total);
    for (int64_t dim_idx = 0; dim_idx < head_dim; ++dim_idx) out[dim_idx] = 0.0f;
    for (int64_t key_idx = 0; key_idx < num_keys; ++key_idx) {
        const float weight = scores[key_idx] * inv_total;
        const float* value = v + key_idx * kv_stride;
        for (int64_t dim_idx = 0; dim_idx < head_dim; ++dim_idx) out[dim_idx] += weight * value[dim_idx];
    }
}

void attention_group(const float* q, int64_t q_stride, int64_t num_heads, const float* k, const float* v,
                     int64_t kv_stride, int64_t num_keys, int64_t head_dim, float scale, float* out,
                     int64_t out_stride, float* scores) {
    for (int64_t head = 0; head < num_heads; ++head) {
        attention_head(q + head * q_stride, k, v, kv_stride, num_keys, head_dim, scale, scores, out + head * out_stride);
    }
}

}  // namespace tern::kernels::ref
