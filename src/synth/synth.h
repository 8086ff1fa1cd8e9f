// Synthetic models: a GGUF in a real architecture and shape with random weights (normal, std 0.02; norm
// weights 1), following GGUF naming conventions so other readers (llama.cpp) load it too.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "base/thread_pool.h"
#include "synth/presets.h"
#include "tensor/dtype.h"

namespace tern {

struct SynthOptions {
    DType weight_type = DType::kF32;  // matrices; norms and biases stay f32
    uint64_t seed = 42;
};

// The type a tensor of `row_length` gets when `requested` is asked for: llama.cpp keeps the output matrix at
// q6_K under 4/5-bit types, and a row that does not fit the block size falls back to a type that does.
DType synth_tensor_type(DType requested, int64_t row_length, bool is_output);

Status write_synth_model(const ModelPreset& preset, const SynthOptions& options, const std::string& path,
                         ThreadPool* pool);

}  // namespace tern
