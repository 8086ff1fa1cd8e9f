// Which type each tensor gets when a model is quantized: llama.cpp's per-tensor rules (llama_tensor_get_type)
// for the presets tern offers, and the fallback for rows that fit no block of the chosen type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"

namespace tern {

enum class QuantPreset { kQ8_0, kQ4_0, kQ4_K, kQ5_K, kQ6_K, kQ4_K_M };

std::optional<QuantPreset> parse_quant_preset(std::string_view name);  // case-insensitive: "q8_0", "Q4_K_M", ...
std::string_view quant_preset_name(QuantPreset preset);
DType preset_base_type(QuantPreset preset);
uint32_t preset_file_type(QuantPreset preset);  // llama.cpp's llama_ftype for general.file_type

// What the quantizer knows about the model when it picks a tensor's type.
struct TensorRuleContext {
    int64_t num_layers = 0;  // blocks (attn_v / ffn_down tensors) in the model
    bool has_output = true;  // an output.weight exists; without it token_embd doubles as the output matrix
};

// The tensor's new type, or nullopt when it is copied unchanged (1-D tensors, names not ending in ".weight").
// `dims[0]` is the row length.
std::optional<DType> choose_tensor_type(QuantPreset preset, const std::string& name, const std::vector<int64_t>& dims,
                                        const TensorRuleContext& context);

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third one between them.
bool use_more_bits(int64_t layer_idx, int64_t num_layers);

}  // namespace tern
