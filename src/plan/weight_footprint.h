// Weight bytes of a model shape at a weight type, tensor by tensor as `tern synth` and llama.cpp's quantizer lay
// them out (the output matrix stays at q6_K under 4/5-bit types; norms and biases stay f32).
#pragma once

#include <cstdint>
#include <string>

#include "plan/model_shape.h"
#include "tensor/dtype.h"

namespace tern::plan {

struct WeightFootprint {
    DType type = DType::kF16;  // the requested type (most matrices); see the header comment for exceptions
    bool from_file = false;    // true: the GGUF's own tensor bytes; false: computed from the shape
    int64_t num_params = 0;
    int64_t bytes = 0;
    int64_t matmul_params = 0;  // params one decode step multiplies with (all but a looked-up embedding table)
    int64_t matmul_bytes = 0;   // bytes one decode step streams from memory
};

// The file's own bytes for a GGUF shape; otherwise computed from the shape at `type`.
WeightFootprint weight_footprint(const ModelShape& shape, DType type);
WeightFootprint file_weight_footprint(const ModelShape& shape);  // requires shape.file_weight_bytes

// Scales a footprint to `bytes` in total (a measured or given weight size), keeping the matmul share.
WeightFootprint with_total_bytes(const WeightFootprint& footprint, int64_t bytes);

// True for the block-quantized integer types, whose matrix products run on the device's int8 units.
bool is_integer_quantized(DType type);
// Whether tern can size `type` as a weight type (a plain float or a ggml block type).
bool is_plannable_weight_type(DType type);

}  // namespace tern::plan
