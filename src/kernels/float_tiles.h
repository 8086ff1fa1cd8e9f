// The loop nest of the row-major float matmuls (F32, F16 and BF16 weights against float activations), shared by
// the SIMD kernel sets; each supplies the register tile. Rows are taken in panels small enough to stay in L2 while
// every token tile passes over them; a token tile's activations (a few rows of floats) stay in L1 meanwhile. One
// token (decode) is a single pass over the weights.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "kernels/activations.h"
#include "tensor/matrix_view.h"

namespace tern::kernels {

struct FloatTileArgs {
    const MatrixView* weights;
    const float* x;  // token t's activations at x + t * x_stride
    int64_t x_stride;
    float* y;  // y[t * y_stride + row]
    int64_t y_stride;
};

// Kernel::tile<kRows, kTokens>(args, first_row, first_token) computes kRows rows x kTokens tokens, each output a
// sum over the whole row in an order that depends only on the row length: any split of the rows across threads
// gives the same bits.
template <typename Kernel, int kMaxRows, int kMaxTokens>
class FloatTiledMatmul {
public:
    static void run(const MatrixView& weights, const Activations& activations, int64_t row_begin, int64_t row_end,
                    float* y, int64_t y_stride) {
        constexpr int64_t kPanelBytes = 256 * 1024;
        const FloatTileArgs args{&weights, activations.f32, activations.f32_stride, y, y_stride};
        const int64_t num_tokens = activations.num_tokens;
        const int64_t num_token_tiles = (num_tokens + kMaxTokens - 1) / kMaxTokens;
        const int64_t panel_rows = std::max<int64_t>(kMaxRows, kPanelBytes / weights.row_stride / kMaxRows * kMaxRows);
        for (int64_t panel_begin = row_begin; panel_begin < row_end; panel_begin += panel_rows) {
            const int64_t panel_end = std::min(row_end, panel_begin + panel_rows);
            for (int64_t tile_idx = 0; tile_idx < num_token_tiles; ++tile_idx) {
                // Balanced token tiles: 5 tokens run as 3 + 2, not 4 + 1.
                const int64_t first_token = tile_idx * num_tokens / num_token_tiles;
                const int64_t tile_tokens = (tile_idx + 1) * num_tokens / num_token_tiles - first_token;
                for (int64_t row = panel_begin; row < panel_end; row += kMaxRows) {
                    const int64_t tile_rows = std::min<int64_t>(kMaxRows, panel_end - row);
                    kTiles[static_cast<size_t>((tile_rows - 1) * kMaxTokens + tile_tokens - 1)](args, row, first_token);
                }
            }
        }
    }

private:
    using TileFn = void (*)(const FloatTileArgs&, int64_t first_row, int64_t first_token);

    template <size_t... kIdx>
    static constexpr std::array<TileFn, sizeof...(kIdx)> make_tiles(std::index_sequence<kIdx...>) {
        return {&Kernel::template tile<static_cast<int>(kIdx) / kMaxTokens + 1,
                                       static_cast<int>(kIdx) % kMaxTokens + 1>...};
    }

    // Entry (rows - 1) * kMaxTokens + tokens - 1.
    static constexpr std::array<TileFn, kMaxRows * kMaxTokens> kTiles =
        make_tiles(std::make_index_sequence<kMaxRows * kMaxTokens>{});
};

}  // namespace tern::kernels
