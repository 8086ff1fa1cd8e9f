// Pieces shared by the AVX-512 micro-kernels over 16-row interleaved weights (kernels/packed_weights.h).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <utility>

#include "kernels/packed_weights.h"

namespace tern::kernels::avx512 {

// The most tokens the streamed batched-decode kernels (Q4_0 / Q8_0 / Q6_K stream_group) take in one call: their
// integer dots, one register per token, fill the 32 vector registers with the weights beside them.
constexpr int kMaxStreamTokens = 16;

// Four activation bytes in every 32-bit lane: the operand vpdpbusd multiplies each weight lane's 4 bytes by.
inline __m512i broadcast_4_bytes(const int8_t* source) {
    int32_t value;
    std::memcpy(&value, source, 4);
    return _mm512_set1_epi32(value);
}

// Asks for the cache lines of [first, first + bytes): the tile kernels call it a fixed distance ahead of the weights
// they read, where the hardware prefetcher lags (short streams such as a mixture's experts, or several groups read
// interleaved). A prefetch past the weights' end never faults.
inline void prefetch_lines(const uint8_t* first, int64_t bytes) {
    for (int64_t line = 0; line < (bytes + 63) / 64; ++line) {
        _mm_prefetch(reinterpret_cast<const char*>(first + line * 64), _MM_HINT_T0);
    }
}

// Values 4k..4k+3 (k < 4) or 16 + 4(k - 4).. of a 32-value block's 16 rows in the Q4_0x16 nibble layout: nibble
// vector k % 4, low or high nibbles (the 64 bytes are loaded twice rather than held in a register).
inline __m512i nibble_chunk(const uint8_t* nibbles, int k) {
    const __m512i low_nibble = _mm512_set1_epi8(0x0F);
    const __m512i raw = _mm512_loadu_si512(nibbles + (k % 4) * 64);
    return k < 4 ? _mm512_and_si512(raw, low_nibble) : _mm512_and_si512(_mm512_srli_epi16(raw, 4), low_nibble);
}

// y[token][16 rows of the group], without the rows past the matrix's end.
inline void store_group_rows(const PackedWeights& weights, float* y, int64_t y_stride, int64_t group_idx,
                             int64_t token, __m512 values) {
    const int64_t first_row = group_idx * kPackRows, num_valid = weights.view.num_rows - first_row;
    float* destination = y + token * y_stride + first_row;
    if (num_valid >= 16) {
        _mm512_storeu_ps(destination, values);
    } else {
        _mm512_mask_storeu_ps(destination, static_cast<__mmask16>((1u << num_valid) - 1), values);
    }
}

// Stores a tile's totals[g][t] (group group_idx + g, token first_token + t).
template <int kGroups, int kTokens>
inline void store_tile(const PackedWeights& weights, float* y, int64_t y_stride, int64_t group_idx,
                       int64_t first_token, const __m512 (&totals)[kGroups][kTokens]) {
    for (int g = 0; g < kGroups; ++g) {
        for (int t = 0; t < kTokens; ++t) {
            store_group_rows(weights, y, y_stride, group_idx + g, first_token + t, totals[g][t]);
        }
    }
}

// Token tiles of at most max_tile tokens, balanced: 16 tokens run as 5 + 5 + 6 with max_tile 6, not 6 + 6 + 4.
// Tile tile_idx covers tokens [begin(tile_idx), begin(tile_idx) + size(tile_idx)).
struct TokenTiles {
    int64_t num_tokens;
    int64_t num_tiles;
    TokenTiles(int64_t tokens, int64_t max_tile) : num_tokens(tokens), num_tiles((tokens + max_tile - 1) / max_tile) {}
    int64_t begin(int64_t tile_idx) const { return tile_idx * num_tokens / num_tiles; }
    int64_t size(int64_t tile_idx) const { return begin(tile_idx + 1) - begin(tile_idx); }
};

// The token-tile loop of the packed int8 kernels. Kernel::Args is what every tile reads,
// Kernel::tile<kGroups, kTokens>(args, group_idx, first_token) computes kGroups groups x kTokens tokens, and
// Kernel::groups_per_tile(n) says how many groups a tile of n tokens takes (one token: one group, one sequential
// stream). Panels of groups small enough to stay in L2 are passed over by every token tile; a panel is a multiple
// of every tile's group count, so only the matrix's last groups take the one-group tiles.
template <typename Kernel, int kMaxTile>
class TiledMatmul {
public:
    using Args = typename Kernel::Args;

    static void run(const Args& args, const PackedWeights& weights, int64_t num_tokens, int64_t group_begin,
                    int64_t group_end) {
        constexpr int64_t kPanelBytes = 256 * 1024;
        const TokenTiles tiles(num_tokens, kMaxTile);
        const int64_t panel_groups =
            std::max<int64_t>(kPanelMultiple, kPanelBytes / weights.group_bytes / kPanelMultiple * kPanelMultiple);
        for (int64_t panel_begin = group_begin; panel_begin < group_end; panel_begin += panel_groups) {
            const int64_t panel_end = std::min(group_end, panel_begin + panel_groups);
            for (int64_t tile_idx = 0; tile_idx < tiles.num_tiles; ++tile_idx) {
                const int64_t first_token = tiles.begin(tile_idx);
                const Entry& tile = kTable[static_cast<size_t>(tiles.size(tile_idx))];
                int64_t group_idx = panel_begin;
                for (; group_idx + tile.num_groups <= panel_end; group_idx += tile.num_groups) {
                    tile.wide(args, group_idx, first_token);
                }
                for (; group_idx < panel_end; ++group_idx) tile.single(args, group_idx, first_token);
            }
        }
    }

private:
    using TileFn = void (*)(const Args&, int64_t group_idx, int64_t first_token);
    struct Entry {
        TileFn wide;
        TileFn single;
        int num_groups;
    };

    template <int kTokens>
    static constexpr Entry entry() {
        constexpr int kGroups = Kernel::groups_per_tile(kTokens);
        return {Kernel::template tile<kGroups, kTokens>, Kernel::template tile<1, kTokens>, kGroups};
    }

    template <int... kCounts>
    static constexpr std::array<Entry, kMaxTile + 1> table(std::integer_sequence<int, kCounts...>) {
        return {Entry{}, entry<kCounts + 1>()...};
    }

    static constexpr int64_t panel_multiple() {
        int64_t multiple = 1;
        for (int tokens = 1; tokens <= kMaxTile; ++tokens) {
            multiple = std::lcm<int64_t>(multiple, Kernel::groups_per_tile(tokens));
        }
        return multiple;
    }

    static constexpr std::array<Entry, kMaxTile + 1> kTable = table(std::make_integer_sequence<int, kMaxTile>{});
    static constexpr int64_t kPanelMultiple = panel_multiple();
};

}  // namespace tern::kernels::avx512
