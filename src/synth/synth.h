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
    // > 0: a model whose next token mostly follows from the current one, as a trained model's often does. Token
    // embeddings are scaled by this gain and the output matrix's row for token j is the unscaled embedding of the
    // token before j in a fixed random cycle through the vocabulary, so the last hidden state points at the current
    // token's successor while the random layers pull elsewhere. Unlike a plain random network, whose greedy tokens
    // 4-bit rounding mostly changes, its lower-bit copies then agree with it often: a draft model to measure
    // speculative decoding with (docs/perf/speculative.md). Needs a preset with its own output matrix.
    float successor_gain = 0.0f;
};

// The type a tensor of `row_length` gets when `requested` is asked for: llama.cpp keeps the output matrix at
// q6_K under 4/5-bit types, and a row that does not fit the block size falls back to a type that does.
DType synth_tensor_type(DType requested, int64_t row_length, bool is_output);

Status write_synth_model(const ModelPreset& preset, const SynthOptions& options, const std::string& path,
                         ThreadPool* pool);

}  // namespace tern
