#include "quantize/tensor_rules.h"

#include <cctype>

#include "synth/synth.h"

namespace tern {
namespace {

struct PresetInfo {
    QuantPreset preset;
    std::string_view name;
    DType base_type;
    uint32_t file_type;
};

// llama_ftype: MOSTLY_Q8_0 = 7, Q4_0 = 2, Q4_K_S = 14, Q5_K_S = 16, Q6_K = 18, Q4_K_M = 15. Plain Q4_K and Q5_K
// keep every matrix at the base type (as llama-quantize --pure), which is closest to the _S mixes.
constexpr PresetInfo kPresets[] = {
    {QuantPreset::kQ8_0, "Q8_0", DType::kQ8_0, 7},  {QuantPreset::kQ4_0, "Q4_0", DType::kQ4_0, 2},
    {QuantPreset::kQ4_K, "Q4_K", DType::kQ4_K, 14}, {QuantPreset::kQ5_K, "Q5_K", DType::kQ5_K, 16},
    {QuantPreset::kQ6_K, "Q6_K", DType::kQ6_K, 18}, {QuantPreset::kQ4_K_M, "Q4_K_M", DType::kQ4_K, 15},
};

const PresetInfo& info(QuantPreset preset) {
    for (const PresetInfo& entry : kPresets) {
        if (entry.preset == preset) return entry;
    }
    return kPresets[0];
}

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// The block index of "blk.N.<...>", or -1.
int64_t layer_of(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return -1;
    int64_t value = 0;
    size_t pos = 4;
    if (pos >= name.size() || !std::isdigit(static_cast<unsigned char>(name[pos]))) return -1;
    while (pos < name.size() && std::isdigit(static_cast<unsigned char>(name[pos])))
        value = value * 10 + (name[pos++] - '0');
    return value;
}

}  // namespace

std::optional<QuantPreset> parse_quant_preset(std::string_view name) {
    for (const PresetInfo& entry : kPresets) {
        if (entry.name.size() != name.size()) continue;
        bool same = true;
        for (size_t idx = 0; idx < name.size(); ++idx) {
            same = same && std::toupper(static_cast<unsigned char>(name[idx])) == entry.name[idx];
        }
        if (same) return entry.preset;
    }
    return std::nullopt;
}

std::string_view quant_preset_name(QuantPreset preset) {
    return info(preset).name;
}
DType preset_base_type(QuantPreset preset) {
    return info(preset).base_type;
}
uint32_t preset_file_type(QuantPreset preset) {
    return info(preset).file_type;
}

bool use_more_bits(int64_t layer_idx, int64_t num_layers) {
    return layer_idx < num_layers / 8 || layer_idx >= 7 * num_layers / 8 || (layer_idx - num_layers / 8) % 3 == 2;
}

std::optional<DType> choose_tensor_type(QuantPreset preset, const std::string& name, const std::vector<int64_t>& dims,
                                        const TensorRuleContext& context) {
    if (dims.size() < 2 || !ends_with(name, ".weight")) return std::nullopt;
    const DType base = preset_base_type(preset);
    const int64_t row_length = dims[0];
    const bool is_output = name == "output.weight" || (!context.has_output && name == "token_embd.weight");
    DType type = base;
    // llama.cpp's mixes raise the tensors most sensitive to error; the Q4_K_M rules for llama-family blocks.
    if (preset == QuantPreset::kQ4_K_M && !is_output) {
        const int64_t layer = layer_of(name);
        const bool sensitive = ends_with(name, ".attn_v.weight") || ends_with(name, ".ffn_down.weight");
        if (sensitive && layer >= 0 && use_more_bits(layer, context.num_layers)) type = DType::kQ6_K;
        if (ends_with(name, ".attn_qkv.weight")) type = DType::kQ5_K;
    }
    // The output matrix is kept at q6_K under every 4/5/6-bit preset (llama.cpp: "new_type != Q8_0 -> Q6_K").
    if (is_output && base != DType::kQ8_0) type = DType::kQ6_K;
    return synth_tensor_type(type, row_length, false);
}

}  // namespace tern
