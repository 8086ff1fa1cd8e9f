// A read-only view of a row-major matrix in any ggml type: `num_rows` rows of `row_length` elements,
// rows `row_stride` bytes apart. Kernels take these; they never own memory.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace tern {

struct MatrixView {
    DType type = DType::kF32;
    const uint8_t* data = nullptr;
    int64_t row_length = 0;
    int64_t num_rows = 0;
    int64_t row_stride = 0;

    const uint8_t* row(int64_t row_idx) const { return data + row_idx * row_stride; }
};

}  // namespace tern
