// The token loop of the row-major K-quant kernels: for each row, tiles of kTile tokens share one unpacking of the
// row's blocks, and the tokens left over go one at a time. `tile(row, first_token, count)` gets the tile width as
// a std::integral_constant, so each width compiles to its own register-resident loop.
#pragma once

#include <cstdint>
#include <type_traits>

namespace tern::kernels::avx512 {

template <int kTile, typename TileFn>
inline void for_each_row_tile(int64_t row_begin, int64_t row_end, int64_t num_tokens, const TileFn& tile) {
    for (int64_t row = row_begin; row < row_end; ++row) {
        int64_t token = 0;
        for (; token + kTile <= num_tokens; token += kTile) tile(row, token, std::integral_constant<int, kTile>{});
        for (; token < num_tokens; ++token) tile(row, token, std::integral_constant<int, 1>{});
    }
}

}  // namespace tern::kernels::avx512
