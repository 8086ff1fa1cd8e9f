// AVX2 attention of the query heads that share one KV head, over positions paged into KV blocks, for x86 CPUs
// without AVX-512. The layout of the AVX-512 group kernel with 8-wide vectors: up to 8 heads sit in the 8 lanes of
// a vector, a tile of up to 16 keys is converted to floats once for all of them, Q . K is vector FMAs with
// broadcast key elements, and an online softmax (running max and sum) means no score row is stored.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/x86/avx2/math_avx2.h"

namespace tern::kernels::avx2 {
namespace {

constexpr int kMaxHeadDim = 256;
constexpr int kLanes = 8;

// Elements [8 * chunk, 8 * chunk + 8) of a cached row as floats.
template <KvType kType>
inline __m256 load_chunk(const uint8_t* row, int chunk) {
    if constexpr (kType == KvType::kF32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + 8 * chunk);
    } else if constexpr (kType == KvType::kF16) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * chunk)));
    } else {
        const uint8_t* block = row + 34 * (chunk / 4);
        uint16_t scale_bits;
        std::memcpy(&scale_bits, block, sizeof(scale_bits));
        const __m256 scale = _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(scale_bits)));
        const __m128i quants = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + 8 * (chunk % 4)));
        return _mm256_mul_ps(scale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(quants)));
    }
}

// Online-softmax state of up to 8 heads (one lane each) and their output rows acc[head * head_dim + d].
struct GroupState {
    __m256 max_score;
    __m256 total;
    alignas(32) float acc[kLanes * kMaxHeadDim];
};

// scores[key] lane h = q_h . k_key for the tile's keys (q pre-scaled, q_by_dim[d * 8 + h]); 8 keys at a time, so
// the accumulators fit the 16 registers. Keys past num_rows get -1e30 (weight 0).
inline void tile_scores(const float* q_by_dim, int head_dim, const float* keys, int num_rows, __m256* scores) {
    for (int first_key = 0; first_key < 16; first_key += 8) {
        __m256 partial[8];
        for (__m256& value : partial) value = _mm256_setzero_ps();
        for (int d = 0; d < head_dim; ++d) {
            const __m256 q = _mm256_load_ps(q_by_dim + kLanes * d);
            for (int key = 0; key < 8; ++key) {
                partial[key] = _mm256_fmadd_ps(q, _mm256_broadcast_ss(keys + (first_key + key) * head_dim + d),
                                               partial[key]);
            }
        }
        for (int key = 0; key < 8; ++key) scores[first_key + key] = partial[key];
    }
    for (int key = num_rows; key < 16; ++key) scores[key] = _mm256_set1_ps(-1e30f);
}

// Raises the running max to the tile's, writes weights[8 * key + h] = exp(score - max), updates the totals and
// returns each head's rescale of what came before.
inline __m256 softmax_update(const __m256* scores, GroupState& state, float* weights) {
    __m256 tile_max = scores[0];
    for (int key = 1; key < 16; ++key) tile_max = _mm256_max_ps(tile_max, scores[key]);
    const __m256 new_max = _mm256_max_ps(state.max_score, tile_max);
    __m256 tile_total = _mm256_setzero_ps();
    for (int key = 0; key < 16; ++key) {
        const __m256 p = exp_ps(_mm256_sub_ps(scores[key], new_max));
        _mm256_store_ps(weights + kLanes * key, p);
        tile_total = _mm256_add_ps(tile_total, p);
    }
    const __m256 rescale = exp_ps(_mm256_sub_ps(state.max_score, new_max));
    state.total = _mm256_fmadd_ps(state.total, rescale, tile_total);
    state.max_score = new_max;
    return rescale;
}

template <KvType kType>
void attend_tile(const float* q_by_dim, int num_heads, int head_dim, const uint8_t* key_row, const uint8_t* value_row,
                 int64_t row_stride, int num_rows, GroupState& state) {
    // Per thread and zeroed once, so that rows past num_rows hold finite values of earlier tiles.
    alignas(32) thread_local float keys[16 * kMaxHeadDim] = {};
    alignas(32) thread_local float values[16 * kMaxHeadDim] = {};
    const int num_chunks = head_dim / 8;
    for (int key = 0; key < num_rows; ++key) {
        for (int chunk = 0; chunk < num_chunks; ++chunk) {
            _mm256_store_ps(keys + key * head_dim + 8 * chunk, load_chunk<kType>(key_row + key * row_stride, chunk));
            _mm256_store_ps(values + key * head_dim + 8 * chunk,
                            load_chunk<kType>(value_row + key * row_stride, chunk));
        }
    }
    __m256 scores[16];
    tile_scores(q_by_dim, head_dim, keys, num_rows, scores);
    alignas(32) float weights[16 * kLanes];
    alignas(32) float rescale[kLanes];
    _mm256_store_ps(rescale, softmax_update(scores, state, weights));
    for (int chunk = 0; chunk < num_chunks; ++chunk) {
        __m256 acc[kLanes];
        for (int head = 0; head < num_heads; ++head) {
            acc[head] = _mm256_mul_ps(_mm256_load_ps(state.acc + head * head_dim + 8 * chunk),
                                      _mm256_set1_ps(rescale[head]));
        }
        for (int key = 0; key < num_rows; ++key) {
            const __m256 value = _mm256_load_ps(values + key * head_dim + 8 * chunk);
            for (int head = 0; head < num_heads; ++head) {
                acc[head] = _mm256_fmadd_ps(_mm256_set1_ps(weights[kLanes * key + head]), value, acc[head]);
            }
        }
        for (int head = 0; head < num_heads; ++head) {
            _mm256_store_ps(state.acc + head * head_dim + 8 * chunk, acc[head]);
        }
    }
}

template <KvType kType>
void attend_group(const float* q, int64_t q_stride, int num_heads, const PagedKv& kv, int64_t num_keys, int head_dim,
                  const AttentionScoring& scoring, float* out, int64_t out_stride) {
    const float scale = scoring.scale;
    alignas(32) float q_by_dim[kLanes * kMaxHeadDim];
    if (num_heads < kLanes) std::memset(q_by_dim, 0, sizeof(float) * kLanes * static_cast<size_t>(head_dim));
    for (int head = 0; head < num_heads; ++head) {
        for (int d = 0; d < head_dim; ++d) q_by_dim[kLanes * d + head] = q[head * q_stride + d] * scale;
    }
    GroupState state;
    state.max_score = _mm256_set1_ps(-1e30f);  // finite: exp(old - new) is then 0, not NaN, at the first tile
    state.total = _mm256_setzero_ps();
    std::memset(state.acc, 0, sizeof(float) * static_cast<size_t>(num_heads * head_dim));
    for (int64_t position = scoring.first_key(num_keys); position < num_keys;) {
        const int64_t rows = std::min<int64_t>({kv.block_size - position % kv.block_size, 16, num_keys - position});
        attend_tile<kType>(q_by_dim, num_heads, head_dim, kv.key_row(position), kv.value_row(position), kv.row_stride,
                           static_cast<int>(rows), state);
        position += rows;
    }
    alignas(32) float totals[kLanes];
    _mm256_store_ps(totals, state.total);
    for (int head = 0; head < num_heads; ++head) {
        const __m256 inverse = _mm256_set1_ps(1.0f / totals[head]);
        for (int chunk = 0; chunk < head_dim / 8; ++chunk) {
            _mm256_storeu_ps(out + head * out_stride + 8 * chunk,
                             _mm256_mul_ps(_mm256_load_ps(state.acc + head * head_dim + 8 * chunk), inverse));
        }
    }
}

}  // namespace

void attention_group(const float* q, int64_t q_stride, int64_t num_heads, const PagedKv& kv, int64_t num_keys,
                     int64_t head_dim, const AttentionScoring& scoring, float* out, int64_t out_stride,
                     float* scratch) {
    // Soft-capped scores (Gemma 2) take the reference: AVX2-only machines running Gemma 2 are rare.
    if (head_dim % 8 != 0 || head_dim > kMaxHeadDim || num_keys <= 0 || scoring.softcap > 0.0f) {
        ref::attention_group(q, q_stride, num_heads, kv, num_keys, head_dim, scoring, out, out_stride, scratch);
        return;
    }
    for (int64_t first_head = 0; first_head < num_heads; first_head += kLanes) {
        const int count = static_cast<int>(std::min<int64_t>(kLanes, num_heads - first_head));
        const float* group_q = q + first_head * q_stride;
        float* group_out = out + first_head * out_stride;
        const int dim = static_cast<int>(head_dim);
        switch (kv.type) {
            case KvType::kF32:
                attend_group<KvType::kF32>(group_q, q_stride, count, kv, num_keys, dim, scoring, group_out, out_stride);
                break;
            case KvType::kF16:
                attend_group<KvType::kF16>(group_q, q_stride, count, kv, num_keys, dim, scoring, group_out, out_stride);
                break;
            case KvType::kQ8_0:
                attend_group<KvType::kQ8_0>(group_q, q_stride, count, kv, num_keys, dim, scoring, group_out,
                                            out_stride);
                break;
        }
    }
}

}  // namespace tern::kernels::avx2
