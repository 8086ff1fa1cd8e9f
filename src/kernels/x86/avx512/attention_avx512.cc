// AVX-512 attention of the query heads that share one KV head, over positions paged into KV blocks. Keys are read
// in tiles of up to 16 rows of one block, once for all heads of the group; scores go through an online softmax
// (running max and sum), so no score row is stored and no T x T matrix exists.
//
// Groups of 4 to 8 heads (Llama 3, Qwen2, TinyLlama) take attend_group: the tile's keys are converted to floats once
// into an L1 buffer, and the 8 heads' scores for one key form the 8 lanes of a vector, so Q . K is vector FMAs with
// broadcast keys (no horizontal sums); P . V converts each value vector as it loads it (each is read once per tile)
// and reuses it for all heads. Smaller groups take attend_heads, which vectorises each head's dot products over the
// head dimension. A prefill chunk's consecutive queries share each converted tile in attend_lanes: 2 queries of 5-8
// heads, or 4 of 4, fill the 16 lanes, each lane repeating attend_group's operations so that a query gets the same
// bits in any chunk.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

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

// Gemma 2's soft cap of (already scaled) scores: cap * tanh(score / cap).
inline __m512 soft_cap(__m512 scores, float cap) {
    return _mm512_mul_ps(_mm512_set1_ps(cap), tanh_ps(_mm512_mul_ps(scores, _mm512_set1_ps(1.0f / cap))));
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
void attend_tile(const float* query, int num_chunks, const Tile& tile, const AttentionScoring& scoring,
                 HeadState& state) {
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
    __m512 scores = _mm512_mul_ps(sum_each_16(partial), _mm512_set1_ps(scoring.scale));
    if (scoring.softcap > 0.0f) scores = soft_cap(scores, scoring.softcap);
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
                  int64_t head_dim, const AttentionScoring& scoring, float* out, int64_t out_stride) {
    const int num_chunks = static_cast<int>(head_dim / 16);
    HeadState state[kMaxGroupHeads];
    for (int head = 0; head < num_heads; ++head) {
        state[head].max_score = -std::numeric_limits<float>::infinity();
        state[head].total = 0.0f;
        for (int chunk = 0; chunk < num_chunks; ++chunk) state[head].out[chunk] = _mm512_setzero_ps();
    }
    for (int64_t position = scoring.first_key(num_keys); position < num_keys;) {
        const int64_t row_in_block = position % kv.block_size;
        int64_t rows = kv.block_size - row_in_block;
        if (rows > 16) rows = 16;
        if (rows > num_keys - position) rows = num_keys - position;
        const Tile tile{kv.key_row(position), kv.value_row(position), kv.row_stride, static_cast<int>(rows)};
        for (int head = 0; head < num_heads; ++head) {
            attend_tile<kType>(q + head * q_stride, num_chunks, tile, scoring, state[head]);
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

// low in lanes 0-7, high in lanes 8-15 (AVX-512F only: no DQ insert).
inline __m512 join_halves(__m256 low, __m256 high) {
    return _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(low)), _mm256_castps_pd(high), 1));
}

// A tile's num_rows rows as floats, row-major (rows[key * head_dim + d]). Rows past num_rows are left as they are
// (finite values of an earlier tile): their scores are overwritten and their values never read, so no zero-fill
// is paid per tile.
template <KvType kType>
inline void convert_rows(const uint8_t* first_row, int64_t row_stride, int num_rows, int num_chunks, float* rows) {
    for (int key = 0; key < num_rows; ++key) {
        for (int chunk = 0; chunk < num_chunks; ++chunk) {
            _mm512_storeu_ps(rows + key * num_chunks * 16 + 16 * chunk,
                             load_chunk<kType>(first_row + key * row_stride, chunk));
        }
    }
}

// Online-softmax state of up to 8 heads, one lane each, and their output rows (acc[h * head_dim + d]).
struct GroupState {
    __m256 max_score;
    __m256 total;
    alignas(64) float acc[kMaxGroupHeads * 16 * kMaxHeadChunks];
};

// scores[key] lane h = q_h . k_key over 16 converted key rows (q pre-scaled; q_by_dim[d * 8 + h] = q_h[d]); keys
// past num_rows get -1e30, so weight 0. A soft cap (> 0) applies before that mask, two keys per vector.
inline void tile_scores(const float* q_by_dim, int head_dim, const float* keys, int num_rows, float softcap,
                        __m256* scores) {
    for (int key = 0; key < 16; ++key) scores[key] = _mm256_setzero_ps();
    for (int d = 0; d < head_dim; ++d) {
        const __m256 q = _mm256_load_ps(q_by_dim + 8 * d);
        for (int key = 0; key < 16; ++key) {
            scores[key] = _mm256_fmadd_ps(q, _mm256_set1_ps(keys[key * head_dim + d]), scores[key]);
        }
    }
    for (int key = 0; key < 16 && softcap > 0.0f; key += 2) {
        const __m512 capped = soft_cap(join_halves(scores[key], scores[key + 1]), softcap);
        scores[key] = _mm512_castps512_ps256(capped);
        scores[key + 1] = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(capped), 1));
    }
    for (int key = num_rows; key < 16; ++key) scores[key] = _mm256_set1_ps(-1e30f);
}

// The online-softmax step: raises the running max to the tile's, writes weights[8 * key + h] =
// exp(score - max), adds them to the running total, and returns each head's rescale of what came before.
inline __m256 softmax_update(const __m256* scores, GroupState& state, float* weights) {
    __m256 tile_max = scores[0];
    for (int key = 1; key < 16; ++key) tile_max = _mm256_max_ps(tile_max, scores[key]);
    const __m256 new_max = _mm256_max_ps(state.max_score, tile_max);
    const __m512 new_max_pair = join_halves(new_max, new_max);
    __m512 tile_total = _mm512_setzero_ps();
    for (int key = 0; key < 16; key += 2) {  // two keys' 8 lanes per 16-lane exp
        const __m512 p = exp_ps(_mm512_sub_ps(join_halves(scores[key], scores[key + 1]), new_max_pair));
        _mm512_store_ps(weights + 8 * key, p);
        tile_total = _mm512_add_ps(tile_total, p);
    }
    const __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(tile_total), 1));
    const __m256 rescale =
        _mm512_castps512_ps256(exp_ps(_mm512_castps256_ps512(_mm256_sub_ps(state.max_score, new_max))));
    state.total = _mm256_fmadd_ps(state.total, rescale, _mm256_add_ps(_mm512_castps512_ps256(tile_total), high));
    state.max_score = new_max;
    return rescale;
}

// kHeads (4 or 8) heads' lanes over one tile; heads past the group's own are computed on zero queries and unused.
// kChunks > 0 is head_dim / 16 known at compile time (see with_head_chunks); 0 takes runtime_chunks.
template <KvType kType, int kHeads, int kChunks>
void attend_group_tile(const float* q_by_dim, int runtime_chunks, const Tile& tile, float softcap, GroupState& state) {
    const int num_chunks = kChunks > 0 ? kChunks : runtime_chunks;
    const int head_dim = 16 * num_chunks;
    // Per thread and zeroed once, so that rows past num_rows hold finite values of earlier tiles.
    alignas(64) thread_local float keys[16 * 16 * kMaxHeadChunks] = {};
    alignas(64) float weights[16 * 8];
    convert_rows<kType>(tile.keys, tile.row_stride, tile.num_rows, num_chunks, keys);
    __m256 scores[16];
    tile_scores(q_by_dim, head_dim, keys, tile.num_rows, softcap, scores);
    alignas(32) float rescale_by_head[8];
    _mm256_store_ps(rescale_by_head, softmax_update(scores, state, weights));
    for (int chunk = 0; chunk < num_chunks; ++chunk) {
        __m512 acc[kHeads];
        for (int head = 0; head < kHeads; ++head) {
            acc[head] = _mm512_mul_ps(_mm512_load_ps(state.acc + head * head_dim + 16 * chunk),
                                      _mm512_set1_ps(rescale_by_head[head]));
        }
        for (int key = 0; key < tile.num_rows; ++key) {
            const __m512 value = load_chunk<kType>(tile.values + key * tile.row_stride, chunk);
            for (int head = 0; head < kHeads; ++head) {
                acc[head] = _mm512_fmadd_ps(_mm512_set1_ps(weights[8 * key + head]), value, acc[head]);
            }
        }
        for (int head = 0; head < kHeads; ++head) _mm512_store_ps(state.acc + head * head_dim + 16 * chunk, acc[head]);
    }
}

template <KvType kType, int kHeads, int kChunks>
void attend_group(const float* q, int64_t q_stride, int num_heads, const PagedKv& kv, int64_t num_keys,
                  int64_t head_dim, const AttentionScoring& scoring, float* out, int64_t out_stride) {
    const float scale = scoring.scale;
    const int num_chunks = kChunks > 0 ? kChunks : static_cast<int>(head_dim / 16);
    // Only the head_dim rows in use, and only when some lanes have no head: this runs once per token and KV head.
    alignas(32) float q_by_dim[8 * 16 * kMaxHeadChunks];
    if (num_heads < 8) std::memset(q_by_dim, 0, sizeof(float) * 8 * static_cast<size_t>(head_dim));
    for (int head = 0; head < num_heads; ++head) {
        for (int64_t d = 0; d < head_dim; ++d) q_by_dim[8 * d + head] = q[head * q_stride + d] * scale;
    }
    GroupState state;
    state.max_score = _mm256_set1_ps(-1e30f);  // finite: exp(old - new) is then 0, not NaN, at the first tile
    state.total = _mm256_setzero_ps();
    std::memset(state.acc, 0, sizeof(float) * static_cast<size_t>(kHeads * head_dim));
    for (int64_t position = scoring.first_key(num_keys); position < num_keys;) {
        int64_t rows = std::min<int64_t>({kv.block_size - position % kv.block_size, 16, num_keys - position});
        const Tile tile{kv.key_row(position), kv.value_row(position), kv.row_stride, static_cast<int>(rows)};
        attend_group_tile<kType, kHeads, kChunks>(q_by_dim, num_chunks, tile, scoring.softcap, state);
        position += rows;
    }
    alignas(32) float totals[8];
    _mm256_store_ps(totals, state.total);
    for (int head = 0; head < num_heads; ++head) {
        const __m512 inverse = _mm512_set1_ps(1.0f / totals[head]);
        for (int chunk = 0; chunk < num_chunks; ++chunk) {
            _mm512_storeu_ps(out + head * out_stride + 16 * chunk,
                             _mm512_mul_ps(_mm512_load_ps(state.acc + head * head_dim + 16 * chunk), inverse));
        }
    }
}

// kQueries consecutive query tokens of one sequence against the same keys, each with one more key than the one
// before, their heads side by side in the 16 lanes: 2 queries of up to 8 heads (groups of 5-8), or 4 queries of 4
// heads (Llama 3's groups), lanes [W * query, W * query + W) with W = 16 / kQueries. Each key tile is converted once
// for all of them and Q . K runs on full 16-lane vectors. Every lane does the operations attend_group<kType, 8> (or
// its 4-head form) does for its head, in the same order, so each query gets the bits it gets alone: a query's keys
// past its own are masked in its lanes, which adds exp(-inf) = 0 weights and rescales by exp(0) = 1.
struct LaneState {
    __m512 max_score;
    __m512 total;
    alignas(64) float acc[16 * 16 * kMaxHeadChunks];  // acc[lane * head_dim + d]
};

// The lanes of the queries whose keys in this tile end before `key` (rows_by_query[q]: query q's rows of the tile).
template <int kQueries>
inline __mmask16 masked_lanes(const int* rows_by_query, int key) {
    constexpr int kWidth = 16 / kQueries;
    __mmask16 mask = 0;
    for (int query = 0; query < kQueries; ++query) {
        if (key >= rows_by_query[query]) mask |= static_cast<__mmask16>(((1u << kWidth) - 1) << (kWidth * query));
    }
    return mask;
}

template <KvType kType, int kChunks, int kQueries>
void attend_lanes_tile(const float* q_by_dim, int runtime_chunks, const Tile& tile, const int* rows_by_query,
                       LaneState& state) {
    const int num_chunks = kChunks > 0 ? kChunks : runtime_chunks;
    const int head_dim = 16 * num_chunks;
    alignas(64) thread_local float keys[16 * 16 * kMaxHeadChunks] = {};
    convert_rows<kType>(tile.keys, tile.row_stride, tile.num_rows, num_chunks, keys);
    __m512 scores[16];
    for (int key = 0; key < 16; ++key) scores[key] = _mm512_setzero_ps();
    for (int d = 0; d < head_dim; ++d) {
        const __m512 q = _mm512_load_ps(q_by_dim + 16 * d);
        for (int key = 0; key < 16; ++key) {
            scores[key] = _mm512_fmadd_ps(q, _mm512_set1_ps(keys[key * head_dim + d]), scores[key]);
        }
    }
    for (int key = rows_by_query[0]; key < 16; ++key) {
        scores[key] = _mm512_mask_blend_ps(masked_lanes<kQueries>(rows_by_query, key), scores[key],
                                           _mm512_set1_ps(-1e30f));
    }
    // The online-softmax step of softmax_update, per lane: weights summed over even keys and over odd keys, then
    // added, as its two-keys-per-vector sums do.
    __m512 tile_max = scores[0];
    for (int key = 1; key < 16; ++key) tile_max = _mm512_max_ps(tile_max, scores[key]);
    const __m512 new_max = _mm512_max_ps(state.max_score, tile_max);
    alignas(64) float weights[16 * 16];
    __m512 sums[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int key = 0; key < 16; ++key) {
        const __m512 p = exp_ps(_mm512_sub_ps(scores[key], new_max));
        _mm512_store_ps(weights + 16 * key, p);
        sums[key % 2] = _mm512_add_ps(sums[key % 2], p);
    }
    const __m512 rescale = exp_ps(_mm512_sub_ps(state.max_score, new_max));
    state.total = _mm512_fmadd_ps(state.total, rescale, _mm512_add_ps(sums[0], sums[1]));
    state.max_score = new_max;
    alignas(64) float rescale_by_lane[16];
    _mm512_store_ps(rescale_by_lane, rescale);
    for (int chunk = 0; chunk < num_chunks; ++chunk) {
        __m512 acc[16];
        for (int lane = 0; lane < 16; ++lane) {
            acc[lane] = _mm512_mul_ps(_mm512_load_ps(state.acc + lane * head_dim + 16 * chunk),
                                      _mm512_set1_ps(rescale_by_lane[lane]));
        }
        for (int key = 0; key < tile.num_rows; ++key) {
            const __m512 value = load_chunk<kType>(tile.values + key * tile.row_stride, chunk);
            for (int lane = 0; lane < 16; ++lane) {
                acc[lane] = _mm512_fmadd_ps(_mm512_set1_ps(weights[16 * key + lane]), value, acc[lane]);
            }
        }
        for (int lane = 0; lane < 16; ++lane) _mm512_store_ps(state.acc + lane * head_dim + 16 * chunk, acc[lane]);
    }
}

// Queries first .. first + kQueries - 1 (num_keys_first keys for the first, one more for each next) of up to
// 16 / kQueries heads each.
template <KvType kType, int kChunks, int kQueries>
void attend_lanes(const AttentionQueries& queries, const float* q_first, float* out_first, const PagedKv& kv,
                  int64_t num_keys_first, int64_t head_dim, float scale) {
    constexpr int kWidth = 16 / kQueries;
    const int num_chunks = kChunks > 0 ? kChunks : static_cast<int>(head_dim / 16);
    const int num_heads = static_cast<int>(queries.num_heads);
    alignas(64) float q_by_dim[16 * 16 * kMaxHeadChunks];
    if (num_heads < kWidth) std::memset(q_by_dim, 0, sizeof(float) * 16 * static_cast<size_t>(head_dim));
    for (int query = 0; query < kQueries; ++query) {
        const float* q = q_first + query * queries.q_token_stride;
        for (int head = 0; head < num_heads; ++head) {
            for (int64_t d = 0; d < head_dim; ++d) {
                q_by_dim[16 * d + kWidth * query + head] = q[head * queries.q_head_stride + d] * scale;
            }
        }
    }
    LaneState state;
    state.max_score = _mm512_set1_ps(-1e30f);
    state.total = _mm512_setzero_ps();
    std::memset(state.acc, 0, sizeof(float) * 16 * static_cast<size_t>(head_dim));
    const int64_t num_keys = num_keys_first + kQueries - 1;
    for (int64_t position = 0; position < num_keys;) {
        int64_t rows = std::min<int64_t>({kv.block_size - position % kv.block_size, 16, num_keys - position});
        const Tile tile{kv.key_row(position), kv.value_row(position), kv.row_stride, static_cast<int>(rows)};
        int rows_by_query[kQueries];
        for (int query = 0; query < kQueries; ++query) {
            rows_by_query[query] = static_cast<int>(std::clamp<int64_t>(num_keys_first + query - position, 0, rows));
        }
        attend_lanes_tile<kType, kChunks, kQueries>(q_by_dim, num_chunks, tile, rows_by_query, state);
        position += rows;
    }
    alignas(64) float totals[16];
    _mm512_store_ps(totals, state.total);
    for (int query = 0; query < kQueries; ++query) {
        for (int head = 0; head < num_heads; ++head) {
            const int lane = kWidth * query + head;
            const __m512 inverse = _mm512_set1_ps(1.0f / totals[lane]);
            float* out = out_first + query * queries.out_token_stride + head * queries.out_head_stride;
            for (int chunk = 0; chunk < num_chunks; ++chunk) {
                _mm512_storeu_ps(out + 16 * chunk,
                                 _mm512_mul_ps(_mm512_load_ps(state.acc + lane * head_dim + 16 * chunk), inverse));
            }
        }
    }
}

// Calls body(std::integral_constant<int, head_dim / 16>) for the common head sizes 64 and 128, so that the tile
// loops index the converted rows at constant offsets (with a runtime stride the 16 key rows of Q . K take 16 base
// registers and spill), and body(std::integral_constant<int, 0>) for the others.
template <typename Body>
inline void with_head_chunks(int64_t head_dim, Body body) {
    if (head_dim == 64) {
        body(std::integral_constant<int, 4>{});
    } else if (head_dim == 128) {
        body(std::integral_constant<int, 8>{});
    } else {
        body(std::integral_constant<int, 0>{});
    }
}

template <KvType kType>
void attend(const float* q, int64_t q_stride, int num_heads, const PagedKv& kv, int64_t num_keys, int64_t head_dim,
            const AttentionScoring& scoring, float* out, int64_t out_stride) {
    if (num_heads >= 4) {
        with_head_chunks(head_dim, [&](auto chunks) {
            if (num_heads > 4) {
                attend_group<kType, 8, chunks>(q, q_stride, num_heads, kv, num_keys, head_dim, scoring, out, out_stride);
            } else {
                attend_group<kType, 4, chunks>(q, q_stride, num_heads, kv, num_keys, head_dim, scoring, out, out_stride);
            }
        });
    } else {
        attend_heads<kType>(q, q_stride, num_heads, kv, num_keys, head_dim, scoring, out, out_stride);
    }
}

// kQueries queries at a time through attend_lanes while the chunk has that many left and each sees all its keys from
// position 0 (a window that has begun to slide gives them different first keys); returns the queries done.
template <int kQueries>
int64_t attend_query_lanes(const AttentionQueries& queries, const PagedKv& kv, int64_t head_dim,
                           const AttentionScoring& scoring) {
    const int64_t last_keys = scoring.window > 0 ? scoring.window : std::numeric_limits<int64_t>::max();
    int64_t query = 0;
    for (; query + kQueries <= queries.num_queries && queries.first_num_keys + query + kQueries - 1 <= last_keys;
         query += kQueries) {
        const float* q = queries.q + query * queries.q_token_stride;
        float* out = queries.out + query * queries.out_token_stride;
        const int64_t num_keys = queries.first_num_keys + query;
        with_head_chunks(head_dim, [&](auto chunks) {
            switch (kv.type) {
                case KvType::kF32:
                    attend_lanes<KvType::kF32, chunks, kQueries>(queries, q, out, kv, num_keys, head_dim,
                                                                 scoring.scale);
                    break;
                case KvType::kF16:
                    attend_lanes<KvType::kF16, chunks, kQueries>(queries, q, out, kv, num_keys, head_dim,
                                                                 scoring.scale);
                    break;
                case KvType::kQ8_0:
                    attend_lanes<KvType::kQ8_0, chunks, kQueries>(queries, q, out, kv, num_keys, head_dim,
                                                                  scoring.scale);
                    break;
            }
        });
    }
    return query;
}

}  // namespace

void attention_queries(const AttentionQueries& queries, const PagedKv& kv, int64_t head_dim,
                       const AttentionScoring& scoring, float* scratch) {
    // Several queries share each converted key tile where attend_group would serve each alone with the same
    // per-lane arithmetic (groups of 4 heads: 4 queries; 5-8 heads: 2) and scores are not soft-capped. Groups of 4
    // alone leave half of attend_group's 8 lanes idle: Llama-3-8B's prefill at 4096 tokens of context spent 38% of
    // its cycles there.
    const bool lanes_fit = queries.num_heads >= 4 && queries.num_heads <= kMaxGroupHeads && head_dim % 16 == 0 &&
                           head_dim <= 16 * kMaxHeadChunks && scoring.softcap == 0.0f;
    int64_t query = 0;
    if (lanes_fit && queries.num_heads == 4) query = attend_query_lanes<4>(queries, kv, head_dim, scoring);
    if (lanes_fit && queries.num_heads > 4) query = attend_query_lanes<2>(queries, kv, head_dim, scoring);
    AttentionQueries rest = queries;
    rest.q += query * queries.q_token_stride;
    rest.out += query * queries.out_token_stride;
    rest.first_num_keys += query;
    rest.num_queries -= query;
    attend_each_query<attention_group>(rest, kv, head_dim, scoring, scratch);
}

void attention_group(const float* q, int64_t q_stride, int64_t num_heads, const PagedKv& kv, int64_t num_keys,
                     int64_t head_dim, const AttentionScoring& scoring, float* out, int64_t out_stride,
                     float* scratch) {
    if (head_dim % 16 != 0 || head_dim > 16 * kMaxHeadChunks) {
        ref::attention_group(q, q_stride, num_heads, kv, num_keys, head_dim, scoring, out, out_stride, scratch);
        return;
    }
    for (int64_t first_head = 0; first_head < num_heads; first_head += kMaxGroupHeads) {
        const int count = static_cast<int>(num_heads - first_head < kMaxGroupHeads ? num_heads - first_head
                                                                                   : kMaxGroupHeads);
        const float* group_q = q + first_head * q_stride;
        float* group_out = out + first_head * out_stride;
        switch (kv.type) {
            case KvType::kF32:
                attend<KvType::kF32>(group_q, q_stride, count, kv, num_keys, head_dim, scoring, group_out,
                                           out_stride);
                break;
            case KvType::kF16:
                attend<KvType::kF16>(group_q, q_stride, count, kv, num_keys, head_dim, scoring, group_out,
                                           out_stride);
                break;
            case KvType::kQ8_0:
                attend<KvType::kQ8_0>(group_q, q_stride, count, kv, num_keys, head_dim, scoring, group_out,
                                            out_stride);
                break;
        }
    }
}

}  // namespace tern::kernels::avx512
