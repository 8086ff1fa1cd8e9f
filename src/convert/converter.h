// tern convert: a Hugging Face model folder (config.json, safetensors weights, tokenizer) -> one GGUF file in
// llama.cpp's conventions, which Model::load and llama.cpp both read. Llama-family (Llama, Mistral) and Qwen2
// checkpoints; weights in F32, F16 or BF16. Quantizing is a separate step.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "tensor/dtype.h"

namespace tern {

struct ConvertOptions {
    DType weight_type = DType::kF32;  // matrices: kF32, kF16 or kBF16; norms and biases always stay F32
};

struct ConvertSummary {
    std::string architecture;     // GGUF architecture: "llama", "qwen2" or "qwen3"
    std::string tokenizer_model;  // "llama" (SentencePiece) or "gpt2" (byte-level BPE)
    int64_t num_tensors = 0;
    int64_t num_parameters = 0;
};

// Validates everything (config, every tensor's name and shape, the tokenizer) before writing, so a failed
// conversion leaves no output file. The file is written beside `out_path` and renamed into place when complete.
Result<ConvertSummary> convert_hf_to_gguf(const std::string& hf_dir, const std::string& out_path,
                                          const ConvertOptions& options);

}  // namespace tern
