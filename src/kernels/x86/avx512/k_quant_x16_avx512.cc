// AVX-512 VNNI matmuls of Q4_K and Q5_K weights repacked as Q4_Kx16 / Q5_Kx16 (kernels/packed_weights.h) with
// 8-bit activations. Q5_K is Q4_K with a fifth bit per value, merged into each weight vector as it is loaded.
//
// Each 32-value sub-block j of a row meets one 32-value activation block, so, as in the Q4_0x16 kernels, one
// integer sum per (row, token, block) from 8 vpdpbusd. The activations' d_a is shared by the 256 values of a
// super-block (kernels/activations.h), so per super-block
//   acc[t][r] = sum over j of (d[r] * sc[r][j]) * dot  -  dmin[r] * (sum over j of m[r][j] * sum(q_a of block j))
//   y[t][r] += d_a * acc
// one multiply-add per 8 vpdpbusd; the mins' sum is an exact integer, four vpdpwssd per super-block over 16-bit
// pairs (k_quant_block_sum_pairs). A multiply-add per sub-block for the mins as well was 8-12% slower at 16 and
// 512 tokens (kernels_bench shape/avx512/q4_K, one core, 2026-12-07). The 6-bit scales and mins stay packed as ggml
// has them (12 bytes a row); lane r of the three word vectors holds row r's words, so the 32-bit shuffles of the
// row-major kernel unpack all 16 rows at once, once per group and super-block for every token of a tile.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "kernels/x86/avx512/packed_matmul_avx512.h"
#include "kernels/x86/avx512/packed_tile.h"

namespace tern::kernels::avx512 {
namespace {

constexpr int kMaxTile = 6;
static_assert(kActivationScaleSpan == 256, "one activation scale per K-quant super-block");

// d * sc_j of one super-block of a group, its mins m_j as 16-bit pairs (m0, m2), (m1, m3), (m4, m6), (m5, m7)
// (k_quant_block_sum_pairs' order), and dmin; lane r: row r.
struct SubBlockScales {
    __m512 scales[8];
    __m512i min_pairs[4];
    __m512 dmin;
};

inline __m512 byte_as_float(__m512i words, int byte) {
    return _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(words, 8 * byte), _mm512_set1_epi32(0xFF)));
}

inline void unpack_scales(const uint8_t* super_block, SubBlockScales* out) {
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super_block)));
    out->dmin = _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super_block + kQ4_Kx16MinScalesOffset)));
    const uint8_t* words = super_block + kQ4_Kx16ScaleWordsOffset;
    const __m512i w0 = _mm512_loadu_si512(words), w1 = _mm512_loadu_si512(words + 64);
    const __m512i w2 = _mm512_loadu_si512(words + 128);
    const __m512i low6 = _mm512_set1_epi32(0x3f3f3f3f), low4 = _mm512_set1_epi32(0x0f0f0f0f);
    const __m512i low2 = _mm512_set1_epi32(0x03030303);
    // The word shuffles of quant/blocks.h's unpack_scale_min_k4, on 16 rows at once.
    const __m512i scales_low = _mm512_and_si512(w0, low6), mins_low = _mm512_and_si512(w1, low6);
    const __m512i scales_high = _mm512_or_si512(
        _mm512_and_si512(w2, low4), _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w0, 6), low2), 4));
    const __m512i mins_high = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w2, 4), low4),
                                              _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(w1, 6), low2), 4));
    for (int byte = 0; byte < 4; ++byte) {
        out->scales[byte] = _mm512_mul_ps(byte_as_float(scales_low, byte), d);
        out->scales[byte + 4] = _mm512_mul_ps(byte_as_float(scales_high, byte), d);
    }
    const __m512i even_bytes = _mm512_set1_epi32(0x00FF00FF);
    out->min_pairs[0] = _mm512_and_si512(mins_low, even_bytes);
    out->min_pairs[1] = _mm512_and_si512(_mm512_srli_epi32(mins_low, 8), even_bytes);
    out->min_pairs[2] = _mm512_and_si512(mins_high, even_bytes);
    out->min_pairs[3] = _mm512_and_si512(_mm512_srli_epi32(mins_high, 8), even_bytes);
}

// sum over the super-block's sub-blocks j of m_j * sum(q_a of block j), exact: four vpdpwssd over the pairs.
inline __m512i min_sum(const SubBlockScales& scales, const int32_t* block_sum_pairs) {
    __m512i total = _mm512_setzero_si512();
    for (int i = 0; i < 4; ++i) {
        total = _mm512_dpwssd_epi32(total, scales.min_pairs[i], _mm512_set1_epi32(block_sum_pairs[i]));
    }
    return total;
}

// The super-block's contribution to a token's total: (sums - dmin * min_sum) * d_a.
inline __m512 add_super_block(const SubBlockScales& scales, __m512 sums, const int32_t* block_sum_pairs,
                              float activation_scale, __m512 total) {
    const __m512 corrected = _mm512_fnmadd_ps(scales.dmin, _mm512_cvtepi32_ps(min_sum(scales, block_sum_pairs)), sums);
    return _mm512_fmadd_ps(corrected, _mm512_set1_ps(activation_scale), total);
}

struct TileArgs {
    const PackedWeights* weights;
    const Activations* activations;
    const int32_t* block_sum_pairs;  // k_quant_block_sum_pairs
    float* y;
    int64_t y_stride;
};

struct Q4_KFormat {
    static constexpr int64_t kBlockBytes = kQ4_Kx16BlockBytes;
    static constexpr int64_t kSubBlockBytes = kQ4_Kx16BytesPerSubBlock;
    static __m512i chunk(const uint8_t* sub_block, int k) { return nibble_chunk(sub_block, k); }
};

struct Q5_KFormat {
    static constexpr int64_t kBlockBytes = kQ5_Kx16BlockBytes;
    static constexpr int64_t kSubBlockBytes = kQ5_Kx16BytesPerSubBlock;
    // Bit k of each byte of the fifth-bit vector to bit 4 (16-bit shifts move neighbours' bits in; the mask drops them).
    static __m512i chunk(const uint8_t* sub_block, int k) {
        const __m512i fifth_bits = _mm512_loadu_si512(sub_block + 256);
        const __m512i moved = k < 4 ? _mm512_slli_epi16(fifth_bits, static_cast<unsigned>(4 - k))
                                    : _mm512_srli_epi16(fifth_bits, static_cast<unsigned>(k - 4));
        return _mm512_ternarylogic_epi32(nibble_chunk(sub_block, k), moved, _mm512_set1_epi8(0x10), 0xF8);
    }
};

// With fewer than 8 (group, token) dots a sub-block's 8 vpdpbusd into one register would wait on each other's
// latency; they then go into two chains (even and odd chunks), added at the end: the same integers.
template <typename Format, int kGroups, int kTokens>
inline void add_sub_block(const TileArgs& args, const uint8_t* const* super_blocks, const SubBlockScales* scales,
                          int64_t act_block, int sub_block, int64_t first_token, __m512 (&sums)[kGroups][kTokens]) {
    constexpr int kChains = kGroups * kTokens < 8 ? 2 : 1;
    const Activations& activations = *args.activations;
    const int8_t* q = activations.q8.data() + first_token * activations.length + act_block * 32;
    __m512i dots[kChains][kGroups][kTokens];
    for (auto& chain : dots) for (auto& row : chain) for (__m512i& dot : row) dot = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
        __m512i w[kGroups];
        for (int g = 0; g < kGroups; ++g) {
            w[g] = Format::chunk(super_blocks[g] + kQ4_Kx16QuantsOffset + sub_block * Format::kSubBlockBytes, k);
        }
        for (int t = 0; t < kTokens; ++t) {
            const __m512i a = broadcast_4_bytes(q + t * activations.length + 4 * k);
            for (int g = 0; g < kGroups; ++g) {
                dots[k % kChains][g][t] = _mm512_dpbusd_epi32(dots[k % kChains][g][t], w[g], a);
            }
        }
    }
    for (int t = 0; t < kTokens; ++t) {
        for (int g = 0; g < kGroups; ++g) {
            __m512i dot = dots[0][g][t];
            if constexpr (kChains == 2) dot = _mm512_add_epi32(dot, dots[1][g][t]);
            sums[g][t] = _mm512_fmadd_ps(scales[g].scales[sub_block], _mm512_cvtepi32_ps(dot), sums[g][t]);
        }
    }
}

// How far ahead of each group's super-block the tiles prefetch (packed_tile.h's prefetch_lines): the prefetcher
// lagged a mixture's 768-row experts, each thread's range a few groups (4096 measured best of 1-6 KiB).
constexpr int64_t kPrefetchBytes = 4096;

// The micro-kernel table entries for TiledMatmul (packed_tile.h).
template <typename Format>
struct KQuantTiles {
    using Args = TileArgs;
    static constexpr int groups_per_tile(int num_tokens) { return num_tokens == 1 ? 1 : 2; }

    template <int kGroups, int kTokens>
    static void tile(const TileArgs& args, int64_t group_idx, int64_t first_token) {
        __m512 totals[kGroups][kTokens];
        for (auto& row : totals) for (__m512& total : row) total = _mm512_setzero_ps();
        for (int64_t super_idx = 0; super_idx < args.weights->view.row_length / 256; ++super_idx) {
            alignas(64) SubBlockScales scales[kGroups];
            const uint8_t* super_blocks[kGroups];
            for (int g = 0; g < kGroups; ++g) {
                super_blocks[g] = args.weights->group(group_idx + g) + super_idx * Format::kBlockBytes;
                unpack_scales(super_blocks[g], &scales[g]);
            }
            for (int g = 0; g < kGroups; ++g) prefetch_lines(super_blocks[g] + kPrefetchBytes, Format::kBlockBytes);
            __m512 sums[kGroups][kTokens];
            for (auto& row : sums) for (__m512& sum : row) sum = _mm512_setzero_ps();
            for (int sub_block = 0; sub_block < 8; ++sub_block) {
                add_sub_block<Format>(args, super_blocks, scales, super_idx * 8 + sub_block, sub_block, first_token,
                                      sums);
            }
            const Activations& activations = *args.activations;
            const int64_t num_spans = activations.num_scale_spans();
            for (int t = 0; t < kTokens; ++t) {
                const float activation_scale = activations.scale[static_cast<size_t>(
                    (first_token + t) * activations.num_blocks() + super_idx * kBlocksPerScaleSpan)];
                const int32_t* pairs = args.block_sum_pairs + 4 * ((first_token + t) * num_spans + super_idx);
                for (int g = 0; g < kGroups; ++g) {
                    totals[g][t] = add_super_block(scales[g], sums[g][t], pairs, activation_scale, totals[g][t]);
                }
            }
        }
        store_tile(*args.weights, args.y, args.y_stride, group_idx, first_token, totals);
    }
};

// Batched decode (kMaxTile + 1 to kMaxStreamTokens tokens): all tokens against one group at a time, as the Q4_0 and
// Q6_K stream_group do. A 2-group tile of 5-6 tokens unpacks each weight vector and scale set once per tile (three
// times per 16 tokens) and reads the weights in a burst per L2 panel; here each is unpacked once and the weights
// stream past once. The integer dots of one sub-block take the registers; the super-block sums and totals live in
// L1 (a version that kept them in registers spilled, 131 GOP/s). The same operations in the same order as the
// tiles, so the same bits.
constexpr int64_t kStreamPrefetchBytes = 3072;

struct StreamArgs {
    const PackedWeights* weights;
    const Activations* activations;
    const int8_t* q8;  // interleaved_q8
    const int32_t* block_sum_pairs;  // k_quant_block_sum_pairs
    float* y;
    int64_t y_stride;
};

// Adds sub-block `sub_block` of one super-block, scaled by d * sc, to the tokens' super-block sums (which start at
// the super-block's first sub-block).
template <typename Format, int kTokens>
inline void add_stream_sub_block(const uint8_t* quants, const int8_t* q, __m512 scale, bool first,
                                 float (&sums)[kTokens][16]) {
    __m512i dots[kTokens];
    for (__m512i& dot : dots) dot = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
        const __m512i w = Format::chunk(quants, k);
#pragma GCC unroll 16
        for (int t = 0; t < kTokens; ++t) {
            dots[t] = _mm512_dpbusd_epi32(dots[t], w, broadcast_4_bytes(q + 4 * (k * kTokens + t)));
        }
    }
#pragma GCC unroll 16
    for (int t = 0; t < kTokens; ++t) {
        const __m512 sum = first ? _mm512_setzero_ps() : _mm512_load_ps(sums[t]);
        _mm512_store_ps(sums[t], _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(dots[t]), sum));
    }
}

template <typename Format, int kTokens>
void stream_group(const StreamArgs& args, int64_t group_idx) {
    alignas(64) float totals[kTokens][16];
    alignas(64) float sums[kTokens][16];
    const Activations& activations = *args.activations;
    const int64_t num_blocks = activations.num_blocks(), num_spans = activations.num_scale_spans();
    const uint8_t* const group = args.weights->group(group_idx);
    const int8_t* q = args.q8;
    for (int64_t super_idx = 0; super_idx < num_spans; ++super_idx) {
        const uint8_t* super_block = group + super_idx * Format::kBlockBytes;
        alignas(64) SubBlockScales scales;
        unpack_scales(super_block, &scales);
        for (int sub_block = 0; sub_block < 8; ++sub_block, q += 32 * kTokens) {
            const uint8_t* quants = super_block + kQ4_Kx16QuantsOffset + sub_block * Format::kSubBlockBytes;
            prefetch_lines(quants + kStreamPrefetchBytes, Format::kSubBlockBytes);  // the hardware prefetcher lags
            add_stream_sub_block<Format, kTokens>(quants, q, scales.scales[sub_block], sub_block == 0, sums);
        }
#pragma GCC unroll 16
        for (int t = 0; t < kTokens; ++t) {
            const float activation_scale =
                activations.scale[static_cast<size_t>(t * num_blocks + super_idx * kBlocksPerScaleSpan)];
            const __m512 total = super_idx == 0 ? _mm512_setzero_ps() : _mm512_load_ps(totals[t]);
            const int32_t* pairs = args.block_sum_pairs + 4 * (t * num_spans + super_idx);
            _mm512_store_ps(totals[t], add_super_block(scales, _mm512_load_ps(sums[t]), pairs, activation_scale, total));
        }
    }
    for (int t = 0; t < kTokens; ++t) {
        store_group_rows(*args.weights, args.y, args.y_stride, group_idx, t, _mm512_load_ps(totals[t]));
    }
}

using StreamFn = void (*)(const StreamArgs&, int64_t group_idx);

template <typename Format, int... kCounts>
constexpr std::array<StreamFn, sizeof...(kCounts) + 1> stream_table(std::integer_sequence<int, kCounts...>) {
    return {nullptr, stream_group<Format, kCounts + 1>...};
}

template <typename Format>
void matmul_k_quant(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    const int64_t num_tokens = activations.num_tokens;
    if (num_tokens > kMaxTile && num_tokens <= kMaxStreamTokens) {
        static constexpr auto kStream = stream_table<Format>(std::make_integer_sequence<int, kMaxStreamTokens>{});
        const StreamArgs args{&weights, &activations, interleaved_q8(activations).data(),
                              k_quant_block_sum_pairs(activations).data(), y, y_stride};
        const StreamFn stream = kStream[static_cast<size_t>(num_tokens)];
        for (int64_t group_idx = group_begin; group_idx < group_end; ++group_idx) stream(args, group_idx);
        return;
    }
    const TileArgs args{&weights, &activations, k_quant_block_sum_pairs(activations).data(), y, y_stride};
    TiledMatmul<KQuantTiles<Format>, kMaxTile>::run(args, weights, num_tokens, group_begin, group_end);
}

}  // namespace

void matmul_q4_kx16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    matmul_k_quant<Q4_KFormat>(weights, activations, group_begin, group_end, y, y_stride);
}

void matmul_q5_kx16(const PackedWeights& weights, const Activations& activations, int64_t group_begin,
                    int64_t group_end, float* y, int64_t y_stride) {
    matmul_k_quant<Q5_KFormat>(weights, activations, group_begin, group_end, y, y_stride);
}

}  // namespace tern::kernels::avx512
