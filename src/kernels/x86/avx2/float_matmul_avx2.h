// AVX2 + FMA matmuls of row-major float weights (F32, F16, BF16) with float activations, register-tiled.
#pragma once

#include "kernels/kernels.h"

namespace tern::kernels::avx2 {

// Points the table's matmul_f32, matmul_f16 and matmul_bf16 at this file's kernels.
void set_float_matmuls(KernelTable* table);

}  // namespace tern::kernels::avx2
