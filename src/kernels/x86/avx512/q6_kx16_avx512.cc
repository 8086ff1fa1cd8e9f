// AVX-512 VNNI matmul of Q6_K weights repacked as Q6_Kx16 (kernels/packed_weights.h) with 8-bit activations.
//
// A weight vector is 4 consecutive 6-bit values of 16 rows, rebuilt from a nibble vector and a top-bit vector;
// vpdpbusd with 4 activation bytes broadcast adds their products into 16 row sums. Per 16-value sub-block s of
// row r and token t the integer sum starts at -32 * sum(a) (ggml's bias of 32), so no float work removes it. The
// activations' d_a is shared by each 256-value span (kernels/activations.h), which is one Q6_K super-block, so
//   acc[t][r] = sum over the super-block's 16 sub-blocks of sc[r][s] * d[r] * dot[s],  y[t][r] += d_a[t] * acc
// which is two multiply-adds per 8 vpdpbusd and (row, token), and one per super-block. sc * d is converted once
// per group and super-block and shared by every token of a tile.
//
// The micro-kernel computes kGroups groups x kTokens tokens: its totals, sums and integer dots are
// 3 * kGroups * kTokens registers, so 2 x 4 (24) is the widest that leaves room for the weights. As in the Q4_0x16
// kernels, a panel of groups that fits in L2 stays there while every token tile passes over it.
#include <immintrin.h>

#include <array>
#include <utility>

#include "kernels/x86/avx512/packed_matmul_avx512.h"
#include "kernels/x86/avx512/packed_tile.h"

namespace tern::kernels::avx512 {
namespace {

constexpr int kMaxTile = 4;
static_assert(kActivationScaleSpan == 256, "one activation scale per Q6_K super-block");
constexpr int64_t kSubBlocksPer256 = 16;

struct TileArgs {
    const PackedWeights* weights;
    const int8_t* q8;
    int64_t length;
    const float* activation_scale;  // d_a per token and 32-value block
    const int32_t* bias;            // per token and 16-value sub-block
    float* y;
    int64_t y_stride;
};

// Values 4c..4c+3 of sub-block `half` of a 32-value block, 16 rows, as unsigned bytes 0..63.
template <int kHalf, int kChunk>
inline __m512i weight_chunk(const uint8_t* block32) {
    const __m512i bits_4_5 = _mm512_set1_epi8(0x30);
    const __m512i low = nibble_chunk(block32, kChunk + 4 * kHalf);  // the Q4_0x16 nibble layout
    const __m512i top_bits = _mm512_loadu_si512(block32 + 256 + kHalf * 64);
    // Bits 2c..2c+1 of each byte to bits 4..5; 16-bit shifts move neighbours' bits in, the mask drops them.
    __m512i top;
    if constexpr (kChunk < 2) {
        top = _mm512_slli_epi16(top_bits, 4 - 2 * kChunk);
    } else if constexpr (kChunk == 2) {
        top = top_bits;
    } else {
        top = _mm512_srli_epi16(top_bits, 2);
    }
    return _mm512_ternarylogic_epi32(low, top, bits_4_5, 0xF8);  // low | (top & bits_4_5)
}

// The integer sums of sub-block kHalf of 32-value block `block32_idx` for the tile's tokens.
template <int kHalf, int kGroups, int kTokens>
inline void sub_block_dots(const TileArgs& args, const uint8_t* const* quants, const int8_t* q, const int32_t* bias,
                           int64_t bias_stride, __m512i (&dots)[kGroups][kTokens]) {
    for (int t = 0; t < kTokens; ++t) {
        const __m512i start = _mm512_set1_epi32(bias[t * bias_stride + kHalf]);
        for (int g = 0; g < kGroups; ++g) dots[g][t] = start;
    }
    [&]<int... kChunks>(std::integer_sequence<int, kChunks...>) {
        (
            [&] {
                __m512i w[kGroups];
                for (int g = 0; g < kGroups; ++g) w[g] = weight_chunk<kHalf, kChunks>(quants[g]);
                for (int t = 0; t < kTokens; ++t) {
                    const __m512i a = broadcast_4_bytes(q + t * args.length + 16 * kHalf + 4 * kChunks);
                    for (int g = 0; g < kGroups; ++g) dots[g][t] = _mm512_dpbusd_epi32(dots[g][t], w[g], a);
                }
            }(),
            ...);
    }(std::make_integer_sequence<int, 4>{});
}

// sc * d of every sub-block of one super-block of a group, as floats: scales[s] has row r in lane r.
inline void sub_block_scales(const uint8_t* super_block, __m512* scales) {
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super_block)));
    for (int s = 0; s < kSubBlocksPer256; ++s) {
        const __m128i bytes =
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(super_block + kQ6_Kx16ScalesOffset + 16 * s));
        scales[s] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes)), d);
    }
}

// Adds 32-value block `block32` of super-block `super_idx` to the tile's super-block sums.
template <int kGroups, int kTokens>
inline void add_block(const TileArgs& args, const uint8_t* const* super_blocks, const __m512 (&scales)[kGroups][16],
                      int64_t super_idx, int block32, int64_t first_token, __m512 (&sums)[kGroups][kTokens]) {
    const uint8_t* quants[kGroups];
    for (int g = 0; g < kGroups; ++g) quants[g] = super_blocks[g] + kQ6_Kx16QuantsOffset + block32 * kQ6_Kx16BytesPer32;
    const int64_t element = super_idx * 256 + block32 * 32, bias_stride = args.length / 16;
    const int8_t* q = args.q8 + first_token * args.length + element;
    const int32_t* bias = args.bias + first_token * bias_stride + element / 16;
    __m512i dots[kGroups][kTokens];
    sub_block_dots<0>(args, quants, q, bias, bias_stride, dots);
    for (int g = 0; g < kGroups; ++g) {
        for (int t = 0; t < kTokens; ++t) {
            sums[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots[g][t]), scales[g][2 * block32], sums[g][t]);
        }
    }
    sub_block_dots<1>(args, quants, q, bias, bias_stride, dots);
    for (int g = 0; g < kGroups; ++g) {
        for (int t = 0; t < kTokens; ++t) {
            sums[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots[g][t]), scales[g][2 * block32 + 1], sums[g][t]);
        }
    }
}

// How far ahead of each group's super-block the tiles prefetch, as the K-quant tiles (k_quant_x16_avx512.cc).
constexpr int64_t kTilePrefetchBytes = 4096;

// The micro-kernel table entries for TiledMatmul (packed_tile.h).
struct Q6_KTiles {
    using Args = TileArgs;
    static constexpr int groups_per_tile(int num_tokens) { return num_tokens == 1 ? 1 : 2; }

    template <int kGroups, int kTokens>
    static void tile(const TileArgs& args, int64_t group_idx, int64_t first_token) {
        __m512 totals[kGroups][kTokens];
        for (auto& row : totals) for (__m512& total : row) total = _mm512_setzero_ps();
        for (int64_t super_idx = 0; super_idx < args.length / 256; ++super_idx) {
            alignas(64) __m512 scales[kGroups][kSubBlocksPer256];
            const uint8_t* super_blocks[kGroups];
            for (int g = 0; g < kGroups; ++g) {
                super_blocks[g] = args.weights->group(group_idx + g) + super_idx * kQ6_Kx16BlockBytes;
                sub_block_scales(super_blocks[g], scales[g]);
                prefetch_lines(super_blocks[g] + kTilePrefetchBytes, kQ6_Kx16BlockBytes);
            }
            __m512 sums[kGroups][kTokens];
            for (auto& row : sums) for (__m512& sum : row) sum = _mm512_setzero_ps();
            for (int block32 = 0; block32 < 8; ++block32) {
                add_block(args, super_blocks, scales, super_idx, block32, first_token, sums);
            }
            for (int t = 0; t < kTokens; ++t) {
                const __m512 activation_scale = _mm512_set1_ps(
                    args.activation_scale[(first_token + t) * (args.length / 32) + super_idx * kBlocksPerScaleSpan]);
                for (int g = 0; g < kGroups; ++g) totals[g][t] = _mm512_fmadd_ps(sums[g][t], activation_scale, totals[g][t]);
            }
        }
        store_tile(*args.weights, args.y, args.y_stride, group_idx, first_token, totals);
    }
};


// Batched decode (kMaxTile + 1 to kMaxStreamTokens tokens): all tokens against one group at a time, so each weight
// vector, rebuilt from its bits once, feeds every token's vpdpbusd (a 4-token tile rebuilds it 4 times per 16
// tokens, and the rebuilding competes with vpdpbusd for the vector pipes), and the weights stream past once. The
// integer dots of one sub-block take the registers; sums and totals live in L1. The same operations in the same
// order as the tiles, so the same bits.
constexpr int64_t kStreamPrefetchBytes = 3072;

// The integer sums of sub-block kHalf of one 32-value block for all kTokens tokens, their bytes interleaved
// (chunk k of the block, token t at q + 4 * (k * kTokens + t)).
template <int kHalf, int kChunk, int kTokens>
inline void add_stream_chunk(const uint8_t* quants, const int8_t* q, __m512i (&dots)[kTokens]) {
    const __m512i w = weight_chunk<kHalf, kChunk>(quants);
    constexpr int k = 4 * kHalf + kChunk;
#pragma GCC unroll 16
    for (int t = 0; t < kTokens; ++t) dots[t] = _mm512_dpbusd_epi32(dots[t], w, broadcast_4_bytes(q + 4 * (k * kTokens + t)));
}

// Adds sub-block kHalf of one 32-value block, scaled by its sc * d, to the tokens' super-block sums (which start
// at the super-block's first sub-block).
template <int kHalf, int kTokens>
inline void add_stream_sub_block(const uint8_t* quants, const int8_t* q, const int32_t* bias, int64_t bias_stride,
                                 __m512 scale, bool first, float (&sums)[kTokens][16]) {
    __m512i dots[kTokens];
    for (int t = 0; t < kTokens; ++t) dots[t] = _mm512_set1_epi32(bias[t * bias_stride + kHalf]);
    add_stream_chunk<kHalf, 0>(quants, q, dots);
    add_stream_chunk<kHalf, 1>(quants, q, dots);
    add_stream_chunk<kHalf, 2>(quants, q, dots);
    add_stream_chunk<kHalf, 3>(quants, q, dots);
#pragma GCC unroll 16
    for (int t = 0; t < kTokens; ++t) {
        const __m512 sum = first ? _mm512_setzero_ps() : _mm512_load_ps(sums[t]);
        _mm512_store_ps(sums[t], _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots[t]), scale, sum));
    }
}

template <int kTokens>
void stream_group(const TileArgs& args, int64_t group_idx, int64_t first_token) {
    alignas(64) float totals[kTokens][16];
    alignas(64) float sums[kTokens][16];
    const int64_t bias_stride = args.length / 16, num_blocks = args.length / 32;
    const uint8_t* const group = args.weights->group(group_idx);
    const int8_t* q = args.q8;  // interleaved_q8
    for (int64_t super_idx = 0; super_idx < args.length / 256; ++super_idx) {
        const uint8_t* super_block = group + super_idx * kQ6_Kx16BlockBytes;
        alignas(64) __m512 scales[kSubBlocksPer256];
        sub_block_scales(super_block, scales);
        for (int block32 = 0; block32 < 8; ++block32, q += 32 * kTokens) {
            const uint8_t* quants = super_block + kQ6_Kx16QuantsOffset + block32 * kQ6_Kx16BytesPer32;
            for (int line = 0; line < kQ6_Kx16BytesPer32 / 64; ++line) {  // the hardware prefetcher lags this stream
                _mm_prefetch(reinterpret_cast<const char*>(quants + kStreamPrefetchBytes + 64 * line), _MM_HINT_T0);
            }
            const int32_t* bias = args.bias + first_token * bias_stride + super_idx * 16 + block32 * 2;
            add_stream_sub_block<0>(quants, q, bias, bias_stride, scales[2 * block32], block32 == 0, sums);
            add_stream_sub_block<1>(quants, q, bias, bias_stride, scales[2 * block32 + 1], false, sums);
        }
#pragma GCC unroll 16
        for (int t = 0; t < kTokens; ++t) {
            const __m512 activation_scale =
                _mm512_set1_ps(args.activation_scale[(first_token + t) * num_blocks + super_idx * kBlocksPerScaleSpan]);
            const __m512 total = super_idx == 0 ? _mm512_setzero_ps() : _mm512_load_ps(totals[t]);
            _mm512_store_ps(totals[t], _mm512_fmadd_ps(_mm512_load_ps(sums[t]), activation_scale, total));
        }
    }
    for (int t = 0; t < kTokens; ++t) {
        store_group_rows(*args.weights, args.y, args.y_stride, group_idx, first_token + t, _mm512_load_ps(totals[t]));
    }
}

using StreamFn = void (*)(const TileArgs&, int64_t group_idx, int64_t first_token);

template <int... kCounts>
constexpr std::array<StreamFn, sizeof...(kCounts) + 1> stream_table(std::integer_sequence<int, kCounts...>) {
    return {nullptr, stream_group<kCounts + 1>...};
}

}  // namespace

void matmul_q6_kx16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    const TileArgs args{&weights, activations.q8.data(), activations.length, activations.scale.data(),
                        q6_k_sub_block_biases(activations).data(), y, y_stride};
    const int64_t num_tokens = activations.num_tokens;
    if (num_tokens > kMaxTile && num_tokens <= kMaxStreamTokens) {
        static constexpr auto kStream = stream_table(std::make_integer_sequence<int, kMaxStreamTokens>{});
        const StreamFn stream = kStream[static_cast<size_t>(num_tokens)];
        TileArgs streamed = args;
        streamed.q8 = interleaved_q8(activations).data();
        for (int64_t group_idx = group_begin; group_idx < group_end; ++group_idx) stream(streamed, group_idx, 0);
        return;
    }
    TiledMatmul<Q6_KTiles, kMaxTile>::run(args, weights, num_tokens, group_begin, group_end);
}

}  // namespace tern::kernels::avx512
