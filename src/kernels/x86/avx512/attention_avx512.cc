// AVX-512 attention of the query heads that share one KV head, over a run of cached positions. Keys are read
// in blocks of 16 once for all heads of the group; scores go through an online softmax (running max and sum), so
// no score row is stored and no T x T matrix exists.
#include <immintrin.h>

#include <limits>

#include "kernels/kernels.h"
#include "kernels/x86/avx512/math_avx512.h"

namespace tern::kernels::avx512 {
namespace {

constexpr int kMaxHeadChunks = 16;   // head_dim up to 256
constexpr int kMaxGroupHeads = 8;    // query heads processed together; larger groups are split

// Softmax state and output accumulator of one query head.
struct HeadState {
    float max_score;
    float total;
    __m512 out[kMaxHeadChunks];
};

void attend_heads(const float* q, int64_t q_stride, int num_heads, const float* k, const float* v,
                  int64_t kv_stride, int64_t num_keys, int64_t head_dim, float scale, float* out, int64_t out_stride) {
    const int num_chunks = static_cast<int>(head_dim / 16);
    HeadState state[kMaxGroupHeads];
    for (int head = 0; head < num_heads; ++head) {
        state[head].max_score = -std::numeric_limits<float>::infinity();
        state[head].total = 0.0f;
        for (int chunk = 0; chunk < num_chunks; ++chunk) state[head].out[chunk] = _mm512_setzero_ps();
    }
    for (int64_t first_key = 0; first_key < num_keys; first_key += 16) {
        const int block_keys = static_cast<int>(num_keys - first_key < 16 ? num_keys - first_key : 16);
        const __mmask16 valid = static_cast<__mmask16>(block_keys == 16 ? 0xFFFF : (1u << block_keys) - 1);
        for (int head = 0; head < num_heads; ++head) {
            const float* query = q + head * q_stride;
            __m512 partial[16];
            for (int key = 0; key < 16; ++key) {
                partial[key] = _mm512_setzero_ps();
                if (key >= block_keys) continue;
                const float* key_row = k + (first_key + key) * kv_stride;
                for (int chunk = 0; chunk < num_chunks; ++chunk) {
                    partial[key] = _mm512_fmadd_ps(_mm512_loadu_ps(query + 16 * chunk),
                                                   _mm512_loadu_ps(key_row + 16 * chunk), partial[key]);
                }
            }
            __m512 scores = _mm512_mul_ps(sum_each_16(partial), _mm512_set1_ps(scale));
            scores = _mm512_mask_blend_ps(valid, _mm512_set1_ps(-std::numeric_limits<float>::infinity()), scores);
            HeadState& head_state = state[head];
            const float block_max = _mm512_reduce_max_ps(scores);
            const float new_max = block_max > head_state.max_score ? block_max : head_state.max_score;
            const __m512 weights = exp_ps(_mm512_sub_ps(scores, _mm512_set1_ps(new_max)));
            const float rescale = head_state.total == 0.0f ? 0.0f
                : _mm512_cvtss_f32(exp_ps(_mm512_set1_ps(head_state.max_score - new_max)));
            head_state.total = head_state.total * rescale + _mm512_reduce_add_ps(weights);
            head_state.max_score = new_max;
            alignas(64) float weight_values[16];
            _mm512_store_ps(weight_values, weights);
            for (int chunk = 0; chunk < num_chunks; ++chunk) {
                __m512 accumulated = _mm512_mul_ps(head_state.out[chunk], _mm512_set1_ps(rescale));
                for (int key = 0; key < block_keys; ++key) {
                    const float* value_row = v + (first_key + key) * kv_stride;
                    accumulated = _mm512_fmadd_ps(_mm512_set1_ps(weight_values[key]),
                                                  _mm512_loadu_ps(value_row + 16 * chunk), accumulated);
                }
                head_state.out[chunk] = accumulated;
            }
        }
    }
    for (int head = 0; head < num_heads; ++head) {
        const __m512 inverse = _mm512_set1_ps(1.0f / state[head].total);
        for (int chunk = 0; chunk < num_chunks; ++chunk) {
            _mm512_storeu_ps(out + head * out_stride + 16 * chunk, _mm512_mul_ps(state[head].out[chunk], inverse));
        }
    }
}

}  // namespace

void attention_group(const float* q, int64_t q_stride, int64_t num_heads, const float* k, const float* v,
                     int64_t kv_stride, int64_t num_keys, int64_t head_dim, float scale, float* out,
                     int64_t out_stride, float* scores) {
    if (head_dim % 16 != 0 || head_dim > 16 * kMaxHeadChunks) {
        ref::attention_group(q, q_stride, num_heads, k, v, kv_stride, num_keys, head_dim, scale, out, out_stride,
                             scores);
        return;
    }
    for (int64_t first_head = 0; first_head < num_heads; first_head += kMaxGroupHeads) {
        const int count = static_cast<int>(num_heads - first_head < kMaxGroupHeads ? num_heads - first_head
                                                                                   : kMaxGroupHeads);
        attend_heads(q + first_head * q_stride, q_stride, count, k, v, kv_stride, num_keys, head_dim, scale,
                     out + first_head * out_stride, out_stride);
    }
}

}  // namespace tern::kernels::avx512
