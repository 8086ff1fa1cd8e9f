// AVX-512 attention of the query heads that share one KV head, over positions paged into KV blocks. Keys are read
// in tiles of up to 16 rows of one block, once for all heads of the group, and converted to floats in registers
// (f32, f16 or q8_0 rows); scores go through an online softmax (running max and sum), so no score row is stored
// and no T x T matrix exists.
#include <immintrin.h>

#include <cstring>
#include <limits>

#include "kernels/kernels.h"
#include "kernels/x86/avx512/math_avx512.h"

namespace tern::kernels::avx512 {
namespace {

constexpr int kMaxHeadChunks = 16;  // head_dim up to 256
constexpr int kMaxGroupHeads = 8;   // query heads processed together; larger groups are split

// Elements [16 * chunk, 16 * chunk + 16) of a cached row as floats.
template <KvType kType>
inline __m512 load_chunk(const uint8_t* row, int chunk) {
    if constexpr (kType == KvType::kF32) {
        return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + 16 * chunk);
    } else if constexpr (kType == KvType::kF16) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32 * chunk)));
    } else {
        const uint8_t* block = row + 34 * (chunk / 2);
        uint16_t scale_bits;
        std::memcpy(&scale_bits, block, sizeof(scale_bits));
        const __m512 scale = _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(scale_bits)));
        const __m128i quants = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2 + 16 * (chunk % 2)));
        return _mm512_mul_ps(scale, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(quants)));
    }
}

// Softmax state and output accumulator of one query head.
struct HeadState {
    float max_score;
    float total;
    __m512 out[kMaxHeadChunks];
};

struct Tile {
    const uint8_t* keys;    // row 0 of the tile
    const uint8_t* values;
    int64_t row_stride;
    int num_rows;           // 1..16
};

template <KvType kType>
void attend_tile(const float* query, int num_chunks, const Tile& tile, float scale, HeadState& state) {
    __m512 partial[16];
    for (int key = 0; key < 16; ++key) {
        partial[key] = _mm512_setzero_ps();
        if (key >= tile.num_rows) continue;
        const uint8_t* key_row = tile.keys + key * tile.row_stride;
        for (int chunk = 0; chunk < num_chunks; ++chunk) {
            partial[key] = _mm512_fmadd_ps(_mm512_loadu_ps(query + 16 * chunk), load_chunk<kType>(key_row, chunk),
                                           partial[key]);
        }
    }
    const __mmask16 valid = static_cast<__mmask16>(tile.num_rows == 16 ? 0xFFFF : (1u << tile.num_rows) - 1);
    __m512 scores = _mm512_mul_ps(sum_each_16(partial), _mm512_set1_ps(scale));
    scores = _mm512_mask_blend_ps(valid, _mm512_set1_ps(-std::numeric_limits<float>::infinity()), scores);
    const float tile_max = _mm512_reduce_max_ps(scores);
    const float new_max = tile_max > state.max_score ? tile_max : state.max_score;
    const __m512 weights = exp_ps(_mm512_sub_ps(scores, _mm512_set1_ps(new_max)));
    const float rescale =
        state.total == 0.0f ? 0.0f : _mm512_cvtss_f32(exp_ps(_mm512_set1_ps(state.max_score - new_max)));
    state.total = state.total * rescale + _mm512_reduce_add_ps(weights);
    state.max_score = new_max;
    alignas(64) float weight_values[16];
    _mm512_store_ps(weight_values, weights);
    for (int chunk = 0; chunk < num_chunks; ++chunk) {
        __m512 accumulated = _mm512_mul_ps(state.out[chunk], _mm512_set1_ps(rescale));
        for (int key = 0; key < tile.num_rows; ++key) {
            accumulated = _mm512_fmadd_ps(_mm512_set1_ps(weight_values[key]),
                                          load_chunk<kType>(tile.values + key * tile.row_stride, chunk), accumulated);
        }
        state.out[chunk] = accumulated;
    }
}

template <KvType kType>
void attend_heads(const float* q, int64_t q_stride, int num_heads, const PagedKv& kv, int64_t num_keys,
                  int64_t head_dim, float scale, float* out, int64_t out_stride) {
    const int num_chunks = static_cast<int>(head_dim / 16);
    HeadState state[kMaxGroupHeads];
    for (int head = 0; head < num_heads; ++head) {
        state[head].max_score = -std::numeric_limits<float>::infinity();
        state[head].total = 0.0f;
        for (int chunk = 0; chunk < num_chunks; ++chunk) state[head].out[chunk] = _mm512_setzero_ps();
    }
    for (int64_t position = 0; position < num_keys;) {
        const int64_t row_in_block = position % kv.block_size;
        int64_t rows = kv.block_size - row_in_block;
        if (rows > 16) rows = 16;
        if (rows > num_keys - position) rows = num_keys - position;
        const Tile tile{kv.key_row(position), kv.value_row(position), kv.row_stride, static_cast<int>(rows)};
        for (int head = 0; head < num_heads; ++head) {
            attend_tile<kType>(q + head * q_stride, num_chunks, tile, scale, state[head]);
        }
        position += rows;
    }
    for (int head = 0; head < num_heads; ++head) {
        const __m512 inverse = _mm512_set1_ps(1.0f / state[head].total);
        for (int chunk = 0; chunk < num_chunks; ++chunk) {
            _mm512_storeu_ps(out + head * out_stride + 16 * chunk, _mm512_mul_ps(state[head].out[chunk], inverse));
        }
    }
}

}  // namespace

void attention_group(const float* q, int64_t q_stride, int64_t num_heads, const PagedKv& kv, int64_t num_keys,
                     int64_t head_dim, float scale, float* out, int64_t out_stride, float* scratch) {
    if (head_dim % 16 != 0 || head_dim > 16 * kMaxHeadChunks) {
        ref::attention_group(q, q_stride, num_heads, kv, num_keys, head_dim, scale, out, out_stride, scratch);
        return;
    }
    for (int64_t first_head = 0; first_head < num_heads; first_head += kMaxGroupHeads) {
        const int count = static_cast<int>(num_heads - first_head < kMaxGroupHeads ? num_heads - first_head
                                                                                   : kMaxGroupHeads);
        const float* group_q = q + first_head * q_stride;
        float* group_out = out + first_head * out_stride;
        switch (kv.type) {
            case KvType::kF32:
                attend_heads<KvType::kF32>(group_q, q_stride, count, kv, num_keys, head_dim, scale, group_out,
                                           out_stride);
                break;
            case KvType::kF16:
                attend_heads<KvType::kF16>(group_q, q_stride, count, kv, num_keys, head_dim, scale, group_out,
                                           out_stride);
                break;
            case KvType::kQ8_0:
                attend_heads<KvType::kQ8_0>(group_q, q_stride, count, kv, num_keys, head_dim, scale, group_out,
                                            out_stride);
                break;
        }
    }
}

}  // namespace tern::kernels::avx512
