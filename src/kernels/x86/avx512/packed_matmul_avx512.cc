// AVX-512 VNNI micro-kernels for the repacked int8 matmuls. Compiled alone with AVX-512 flags; nothing here runs
// unless CPUID reported them (kernels/dispatch.cc).
//
// A 64-byte load holds 4 consecutive weights of 16 rows (kernels/packed_weights.h); vpdpbusd with 4 activation
// bytes broadcast adds their products into 16 per-row sums. The weights are stored unsigned (offset 8 or 128), so
// per 32-value block b, row r and token t the signed dot is dot - offset * sum_q[t][b], an integer; the activations'
// scale d_a is shared by a span of 8 blocks (kernels/activations.h), so
//   partial[t][r] = sum over the span's blocks of d_w[r][b] * (dot - offset * sum_q)   (one multiply-add per block)
//   y[t][r]      += d_a[t][span] * partial[t][r]                                      (one per span)
// Every kernel here does these operations in this order, so a row's result has the same bits whatever the number
// of tokens it is computed with.
//
// The micro-kernel computes kGroups groups (16 rows each) x kTokens tokens. This CPU class issues two vpdpbusd per
// cycle but only two vector loads (broadcasts included), so the tile is shaped to need well under one load per
// vpdpbusd: each activation broadcast feeds kGroups vpdpbusd and each weight vector kTokens. Its kGroups * kTokens
// int32 chains (vpdpbusd's latency is about 4 cycles, so 8 or more keep it busy) and float partials fill the vector
// registers; the totals, touched once per span, live in L1.
//
// Tokens are split into balanced tiles of at most kMaxTile; a panel of groups that fits in L2 stays there while
// every token tile passes over it, so each activation byte is fetched from L2/L3 once per panel, not once per group.
// Batched decode (7-16 tokens) instead takes one pass with all tokens against one group (stream_group): its
// weights come from memory, and one even stream beats a burst per panel. (On Zen 4, vpdpbusd and FMA share two
// pipes while loads, converts and integer logic issue beside them: a second multiply-add per block, as a scale per
// block needs, caps any tile at 8 / 10 of the vpdpbusd peak, one at 8 / 9.)
#include "kernels/x86/avx512/packed_matmul_avx512.h"
#include "kernels/x86/avx512/packed_tile.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

namespace tern::kernels::avx512 {
namespace {

constexpr int kMaxTile = 6;
// Calls of more than kMaxTile and at most kMaxStreamTokens (packed_tile.h) tokens (batched decode) take
// stream_group.
// How far ahead of each group's weights the tile kernels prefetch.
constexpr int64_t kPrefetchBytes = 2048;
// How far ahead of its one stream decode_group prefetches. The hardware prefetcher alone left batch-1 Q4_0 decode at
// 19-20 GB/s of a 26-30 GB/s read bandwidth (two threads on the Intel Xeon of 2026-12-06: TinyLlama Q4_0 tg64 33 ->
// 45 tok/s; 1 KiB ahead gave 24.5 GB/s, 2 KiB 26, 4 KiB 27-28, 8 KiB no more).
constexpr int64_t kDecodePrefetchBytes = 4096;

// The 16 fp16 weight scales at the start of a group-block.
inline __m512 load_scales(const uint8_t* block) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)));
}

// The activations' scales of one call reordered for the micro-kernel: within each token tile, span by span (block
// by block), the tile's tokens one after another, so that the micro-kernel reads them at constant offsets from two
// pointers that advance by one span (block) each step. The 8-bit values stay where they are (token t of a tile at
// a constant stride from the tile's first token).
//   span_scale[first_token * num_spans + span * n + t]      d_a of span `span`, token t of the tile of n tokens
//   offset_sum[first_token * num_blocks + block * n + t]    offset * sum_q, what the unsigned weights add to the dot
struct TiledScales {
    std::vector<float> span_scale;
    std::vector<int32_t> offset_sum;
    // What they were made from: a thread's next range of the same input (a dynamic loop) reuses them.
    uint64_t generation = 0;
    int64_t num_tiles = 0;
    int32_t offset = 0;
};

// Each thread reorders the scales for itself (once per input; about 1 value per 32 activations): no thread waits
// for another.
const TiledScales& tile_scales(const Activations& activations, const TokenTiles& tiles, int32_t offset) {
    thread_local TiledScales tiled;  // grows to the largest input, then reused
    if (tiled.generation == activations.generation && tiled.num_tiles == tiles.num_tiles && tiled.offset == offset) {
        return tiled;
    }
    tiled.generation = activations.generation;
    tiled.num_tiles = tiles.num_tiles;
    tiled.offset = offset;
    const int64_t num_blocks = activations.num_blocks(), num_spans = activations.num_scale_spans();
    const int64_t num_tokens = activations.num_tokens;
    if (static_cast<int64_t>(tiled.offset_sum.size()) < num_tokens * num_blocks) {
        tiled.offset_sum.resize(static_cast<size_t>(num_tokens * num_blocks));
    }
    if (static_cast<int64_t>(tiled.span_scale.size()) < num_tokens * num_spans) {  // not implied by the above
        tiled.span_scale.resize(static_cast<size_t>(num_tokens * num_spans));
    }
    for (int64_t tile_idx = 0; tile_idx < tiles.num_tiles; ++tile_idx) {
        const int64_t first = tiles.begin(tile_idx), count = tiles.size(tile_idx);
        for (int64_t t = 0; t < count; ++t) {
            const float* scale = activations.scale.data() + (first + t) * num_blocks;
            const int32_t* block_sum = activations.block_sum.data() + (first + t) * num_blocks;
            int32_t* tiled_offset_sum = tiled.offset_sum.data() + first * num_blocks + t;
            float* tiled_scale = tiled.span_scale.data() + first * num_spans + t;
            for (int64_t block = 0; block < num_blocks; ++block) tiled_offset_sum[block * count] = offset * block_sum[block];
            for (int64_t span = 0; span < num_spans; ++span) tiled_scale[span * count] = scale[span * kBlocksPerScaleSpan];
        }
    }
    return tiled;
}

// chunk(quants, k) is the weight vector of elements 4k..4k+3 of the block's 16 rows, as unsigned bytes. Q4_0x16
// loads its 64 bytes of nibbles twice (low for k < 4, high for k >= 4) rather than holding them in a register.
struct Q4_0x16 {
    static constexpr int64_t kBlockBytes = kQ4_0x16BlockBytes;
    static constexpr int32_t kOffset = 8;
    static __m512i chunk(const uint8_t* quants, int k) { return nibble_chunk(quants, k); }
};

struct Q8_0x16 {
    static constexpr int64_t kBlockBytes = kQ8_0x16BlockBytes;
    static constexpr int32_t kOffset = 128;
    static __m512i chunk(const uint8_t* quants, int k) { return _mm512_loadu_si512(quants + k * 64); }
};

// Where a tile reads and writes.
struct TileArgs {
    const PackedWeights* weights;
    const int8_t* q8;  // the activations' 8-bit values, `length` per token; interleaved_q8 for stream_group
    int64_t length;
    int64_t num_blocks;
    const TiledScales* tiled;
    float* y;
    int64_t y_stride;
};

// The hardware prefetcher follows one stream well but falls behind on kGroups interleaved ones. Prefetches past the
// end of the weights are harmless (they never fault).
template <typename Format, int kGroups>
inline void prefetch_blocks(const uint8_t* block, int64_t group_bytes) {
    for (int g = 0; g < kGroups; ++g) prefetch_lines(block + g * group_bytes + kPrefetchBytes, Format::kBlockBytes);
}

// d_w * (dot - offset_sum) [+ partial]: one block's share of a span's partial sums.
inline __m512 block_term(__m512 weight_scales, __m512i dot, const int32_t* offset_sum) {
    return _mm512_mul_ps(weight_scales, _mm512_cvtepi32_ps(_mm512_sub_epi32(dot, _mm512_set1_epi32(*offset_sum))));
}
inline __m512 add_block_term(__m512 weight_scales, __m512i dot, const int32_t* offset_sum, __m512 partial) {
    return _mm512_fmadd_ps(weight_scales, _mm512_cvtepi32_ps(_mm512_sub_epi32(dot, _mm512_set1_epi32(*offset_sum))),
                           partial);
}

// Where one span of blocks starts and ends, and the pointers a tile of kTokens tokens reads through it.
struct SpanCursor {
    const int8_t* q;
    const float* span_scale;
    const int32_t* offset_sum;
    int64_t num_blocks;
    int64_t span_begin = 0;

    int64_t span_end() const { return std::min(num_blocks, span_begin + kBlocksPerScaleSpan); }
};

inline SpanCursor span_cursor(const TileArgs& args, int64_t first_token) {
    const int64_t num_spans = (args.num_blocks + kBlocksPerScaleSpan - 1) / kBlocksPerScaleSpan;
    return {args.q8 + first_token * args.length, args.tiled->span_scale.data() + first_token * num_spans,
            args.tiled->offset_sum.data() + first_token * args.num_blocks, args.num_blocks};
}

// Rows [16 * group_idx, +16 * kGroups) x tokens [first_token, +kTokens) over every block. With fewer than 8 chains
// each is split in two (even and odd chunks) so that vpdpbusd's latency does not bound the tile.
template <typename Format, int kGroups, int kTokens>
void tile_kernel(const TileArgs& args, int64_t group_idx, int64_t first_token) {
    constexpr int kChains = kGroups * kTokens < 8 ? 2 : 1;
    const int64_t group_bytes = args.weights->group_bytes, length = args.length;
    const uint8_t* group = args.weights->group(group_idx);
    SpanCursor cursor = span_cursor(args, first_token);
    alignas(64) float totals[kGroups][kTokens][16];
    for (; cursor.span_begin < cursor.num_blocks; cursor.span_begin += kBlocksPerScaleSpan) {
        __m512 partials[kGroups][kTokens];
        for (auto& row : partials) for (__m512& partial : row) partial = _mm512_setzero_ps();
        for (int64_t block_idx = cursor.span_begin; block_idx < cursor.span_end(); ++block_idx) {
            const uint8_t* block = group + block_idx * Format::kBlockBytes;
            prefetch_blocks<Format, kGroups>(block, group_bytes);
            __m512i dots[kChains][kGroups][kTokens];
            for (auto& chain : dots) for (auto& row : chain) for (__m512i& dot : row) dot = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) {
                __m512i w[kGroups];
                for (int g = 0; g < kGroups; ++g) w[g] = Format::chunk(block + g * group_bytes + 32, k);
#pragma GCC unroll 8
                for (int t = 0; t < kTokens; ++t) {
                    const __m512i a = broadcast_4_bytes(cursor.q + t * length + 4 * k);
                    for (int g = 0; g < kGroups; ++g) {
                        dots[k % kChains][g][t] = _mm512_dpbusd_epi32(dots[k % kChains][g][t], w[g], a);
                    }
                }
            }
            __m512 weight_scales[kGroups];
            for (int g = 0; g < kGroups; ++g) weight_scales[g] = load_scales(block + g * group_bytes);
#pragma GCC unroll 8
            for (int t = 0; t < kTokens; ++t) {
                for (int g = 0; g < kGroups; ++g) {
                    const __m512i dot = kChains == 2 ? _mm512_add_epi32(dots[0][g][t], dots[kChains - 1][g][t])
                                                     : dots[0][g][t];
                    partials[g][t] = add_block_term(weight_scales[g], dot, cursor.offset_sum + t, partials[g][t]);
                }
            }
            cursor.q += 32;
            cursor.offset_sum += kTokens;
        }
#pragma GCC unroll 8
        for (int t = 0; t < kTokens; ++t) {
            const __m512 activation_scale = _mm512_set1_ps(cursor.span_scale[t]);
            for (int g = 0; g < kGroups; ++g) {
                const __m512 total = cursor.span_begin == 0 ? _mm512_setzero_ps() : _mm512_load_ps(totals[g][t]);
                _mm512_store_ps(totals[g][t], _mm512_fmadd_ps(partials[g][t], activation_scale, total));
            }
        }
        cursor.span_scale += kTokens;
    }
    for (int g = 0; g < kGroups; ++g) {
        for (int t = 0; t < kTokens; ++t) {
            store_group_rows(*args.weights, args.y, args.y_stride, group_idx + g, first_token + t,
                             _mm512_load_ps(totals[g][t]));
        }
    }
}

// One token (decode): one group at a time, so the weights stream in one sequential pass, prefetched
// kDecodePrefetchBytes ahead; two chains per block hide vpdpbusd's latency.
template <typename Format>
void decode_group(const TileArgs& args, int64_t group_idx, int64_t token) {
    const uint8_t* group = args.weights->group(group_idx);
    SpanCursor cursor = span_cursor(args, token);
    __m512 total = _mm512_setzero_ps();
    for (; cursor.span_begin < cursor.num_blocks; cursor.span_begin += kBlocksPerScaleSpan) {
        __m512 partial = _mm512_setzero_ps();
        for (int64_t block_idx = cursor.span_begin; block_idx < cursor.span_end(); ++block_idx) {
            const uint8_t* block = group + block_idx * Format::kBlockBytes;
            prefetch_lines(block + kDecodePrefetchBytes, Format::kBlockBytes);
            __m512i w[8];
            for (int k = 0; k < 8; ++k) w[k] = Format::chunk(block + 32, k);
            __m512i dot_low = _mm512_setzero_si512(), dot_high = _mm512_setzero_si512();
            for (int k = 0; k < 4; ++k) {
                dot_low = _mm512_dpbusd_epi32(dot_low, w[k], broadcast_4_bytes(cursor.q + 4 * k));
                dot_high = _mm512_dpbusd_epi32(dot_high, w[k + 4], broadcast_4_bytes(cursor.q + 16 + 4 * k));
            }
            partial = add_block_term(load_scales(block), _mm512_add_epi32(dot_low, dot_high), cursor.offset_sum,
                                     partial);
            cursor.q += 32;
            cursor.offset_sum += 1;
        }
        total = _mm512_fmadd_ps(partial, _mm512_set1_ps(*cursor.span_scale), total);
        cursor.span_scale += 1;
    }
    store_group_rows(*args.weights, args.y, args.y_stride, group_idx, token, total);
}

// All of a call's tokens (up to kMaxStreamTokens) against one group at a time, so the weights stream past once in
// one sequential pass instead of a burst per panel for the first token tile (the others read it from L2): the
// int32 dots take the registers, the float partials and totals live in L1; the tokens' bytes come interleaved
// (interleaved_q8), one pointer for all. Batched decode streams its weights from
// memory, and at 16 tokens this pass is 5-20% faster than tiles of 5-6 tokens; prefill reuses a panel from L2
// across many token tiles, where the 2-group tiles stay faster.
template <typename Format, int kTokens>
void stream_group(const TileArgs& args, int64_t group_idx, int64_t first_token) {
    const uint8_t* group = args.weights->group(group_idx);
    SpanCursor cursor = span_cursor(args, first_token);
    alignas(64) float totals[kTokens][16];
    alignas(64) float partials[kTokens][16];
    for (; cursor.span_begin < cursor.num_blocks; cursor.span_begin += kBlocksPerScaleSpan) {
        for (int64_t block_idx = cursor.span_begin; block_idx < cursor.span_end(); ++block_idx) {
            const uint8_t* block = group + block_idx * Format::kBlockBytes;
            prefetch_blocks<Format, 1>(block, 0);
            __m512i dots[kTokens];
            for (__m512i& dot : dots) dot = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) {
                const __m512i w = Format::chunk(block + 32, k);
#pragma GCC unroll 16
                for (int t = 0; t < kTokens; ++t) {
                    dots[t] = _mm512_dpbusd_epi32(dots[t], w, broadcast_4_bytes(cursor.q + 4 * (k * kTokens + t)));
                }
            }
            const __m512 weight_scales = load_scales(block);
            if (block_idx == cursor.span_begin) {  // the partials start here: no zeroing pass over L1
#pragma GCC unroll 16
                for (int t = 0; t < kTokens; ++t) {
                    _mm512_store_ps(partials[t], block_term(weight_scales, dots[t], cursor.offset_sum + t));
                }
            } else {
#pragma GCC unroll 16
                for (int t = 0; t < kTokens; ++t) {
                    _mm512_store_ps(partials[t], add_block_term(weight_scales, dots[t], cursor.offset_sum + t,
                                                                _mm512_load_ps(partials[t])));
                }
            }
            cursor.q += 32 * kTokens;
            cursor.offset_sum += kTokens;
        }
#pragma GCC unroll 16
        for (int t = 0; t < kTokens; ++t) {
            const __m512 total = cursor.span_begin == 0 ? _mm512_setzero_ps() : _mm512_load_ps(totals[t]);
            _mm512_store_ps(totals[t], _mm512_fmadd_ps(_mm512_load_ps(partials[t]),
                                                       _mm512_set1_ps(cursor.span_scale[t]), total));
        }
        cursor.span_scale += kTokens;
    }
    for (int t = 0; t < kTokens; ++t) {
        store_group_rows(*args.weights, args.y, args.y_stride, group_idx, first_token + t, _mm512_load_ps(totals[t]));
    }
}

// The micro-kernel table entries for TiledMatmul (packed_tile.h): 2 x 6, 2 x 5, 3 x 4, 4 x 3, 4 x 2 keep a tile at
// 20-24 accumulators; one token takes decode_group.
template <typename Format>
struct PackedTiles {
    using Args = TileArgs;
    static constexpr int groups_per_tile(int num_tokens) {
        return num_tokens == 1 ? 1 : num_tokens >= 5 ? 2 : num_tokens == 4 ? 3 : 4;
    }

    template <int kGroups, int kTokens>
    static void tile(const TileArgs& args, int64_t group_idx, int64_t first_token) {
        if constexpr (kTokens == 1) {
            decode_group<Format>(args, group_idx, first_token);
        } else {
            tile_kernel<Format, kGroups, kTokens>(args, group_idx, first_token);
        }
    }
};

using StreamFn = void (*)(const TileArgs&, int64_t group_idx, int64_t first_token);

template <typename Format, int... kCounts>
constexpr std::array<StreamFn, sizeof...(kCounts) + 1> stream_table(std::integer_sequence<int, kCounts...>) {
    return {nullptr, stream_group<Format, kCounts + 1>...};
}

// Up to kMaxStreamTokens tokens: one pass over the groups, each against all the tokens.
template <typename Format>
void matmul_streamed(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                     int64_t group_end, float* y, int64_t y_stride) {
    static constexpr auto kStream = stream_table<Format>(std::make_integer_sequence<int, kMaxStreamTokens>{});
    const TokenTiles one_tile(activations.num_tokens, kMaxStreamTokens);
    const TileArgs args{&weights, interleaved_q8(activations).data(), activations.length, activations.num_blocks(),
                        &tile_scales(activations, one_tile, Format::kOffset), y, y_stride};
    const StreamFn stream = kStream[static_cast<size_t>(activations.num_tokens)];
    for (int64_t group_idx = group_begin; group_idx < group_end; ++group_idx) stream(args, group_idx, 0);
}

template <typename Format>
void matmul_packed(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                   int64_t group_end, float* y, int64_t y_stride) {
    const int64_t num_tokens = activations.num_tokens;
    if (num_tokens > kMaxTile && num_tokens <= kMaxStreamTokens) {
        return matmul_streamed<Format>(weights, activations, group_begin, group_end, y, y_stride);
    }
    const TileArgs args{&weights, activations.q8.data(), activations.length, activations.num_blocks(),
                        &tile_scales(activations, TokenTiles(num_tokens, kMaxTile), Format::kOffset), y, y_stride};
    TiledMatmul<PackedTiles<Format>, kMaxTile>::run(args, weights, num_tokens, group_begin, group_end);
}

}  // namespace

void matmul_q4_0x16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    matmul_packed<Q4_0x16>(weights, activations, group_begin, group_end, y, y_stride);
}

void matmul_q8_0x16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    matmul_packed<Q8_0x16>(weights, activations, group_begin, group_end, y, y_stride);
}

}  // namespace tern::kernels::avx512
