// Helpers shared by the quant/ sources; not part of the module's API.
#pragma once

#include <cstdint>

#include "base/check.h"
#include "base/fp16.h"

namespace tern::quant_internal {

inline int64_t num_blocks(int64_t num_elements, int64_t block_size) {
    TERN_CHECK(num_elements >= 0 && num_elements % block_size == 0)
        << num_elements << " elements is not a whole number of " << block_size << "-element blocks";
    return num_elements / block_size;
}

// Round half to even, the way ggml's nearest_int does for |value| < 2^22: adding 1.5 * 2^23 makes the float's
// spacing exactly 1, so the addition itself rounds and the integer lands in the low mantissa bits.
inline int nearest_int(float value) {
    const float shifted = value + 12582912.0f;
    return static_cast<int>(fp32_to_bits(shifted) & 0x007fffffu) - 0x00400000;
}

}  // namespace tern::quant_internal
