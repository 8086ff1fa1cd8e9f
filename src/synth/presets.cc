#include "synth/presets.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tern {

const std::vector<ModelPreset>& model_presets() {
    // Shapes from each model's config.json; the `tiny*` presets are small enough for unit tests.
    static const std::vector<ModelPreset> kPresets = {
        {"tiny", "llama", 1024, 512, 128, 4, 352, 4, 2, 10000.0f, 1e-5f, false, false,
         "llama architecture, 4 layers, 128 wide (tests)"},
        {"tiny-qwen2", "qwen2", 1024, 512, 128, 4, 352, 4, 2, 1000000.0f, 1e-6f, true, false,
         "qwen2 architecture with biases and tied embeddings, 4 layers, 128 wide (tests)"},
        {"tiny-qwen3", "qwen3", 1024, 512, 128, 4, 352, 4, 2, 1000000.0f, 1e-6f, true, false,
         "qwen3 architecture (q/k head norms, heads wider than embedding / heads), 4 layers, 128 wide (tests)", 64},
        {"tiny-qwen3moe", "qwen3moe", 1024, 512, 128, 4, 352, 4, 2, 1000000.0f, 1e-6f, false, false,
         "qwen3moe architecture, 8 experts of 64, 2 per token, 4 layers, 128 wide (tests)", 64, 8, 2, 64},
        {"tiny-qwen2moe", "qwen2moe", 1024, 512, 128, 4, 352, 4, 2, 1000000.0f, 1e-6f, false, false,
         "qwen2moe architecture, 8 experts of 64, 2 per token, a shared expert of 128, 4 layers, 128 wide (tests)", 0,
         8, 2, 64, 128},
        {"tiny-phi3", "phi3", 1024, 512, 128, 4, 352, 4, 4, 10000.0f, 1e-5f, false, false,
         "phi3 architecture (fused q/k/v and gate/up matrices), 4 layers, 128 wide (tests)"},
        {"tiny-phi3-128k", "phi3", 1024, 512, 128, 4, 352, 4, 4, 10000.0f, 1e-5f, false, false,
         "phi3 architecture with LongRoPE (long factors past an original context of 64), 4 layers (tests)", 0, 0, 0,
         0, 0, 0, 0.0f, 64},
        {"tiny-gemma2", "gemma2", 1024, 512, 128, 4, 352, 4, 2, 10000.0f, 1e-6f, true, false,
         "gemma2 architecture (GeGLU, post-norms, soft caps), sliding window of 8 in even layers, 4 layers (tests)",
         64, 0, 0, 0, 0, 8},
        {"tiny-gemma3", "gemma3", 1024, 512, 128, 6, 352, 4, 2, 1000000.0f, 1e-6f, true, false,
         "gemma3 architecture (head norms, post-norms), sliding window of 8 in 5 of 6 layers, 6 layers (tests)", 64,
         0, 0, 0, 0, 8, 8.0f},
        {"tiny-mixtral", "llama", 1024, 512, 128, 4, 64, 4, 2, 1000000.0f, 1e-5f, false, false,
         "llama architecture with 8 experts of 64, 2 per token (Mixtral), 4 layers, 128 wide (tests)", 0, 8, 2, 64},
        {"tiny-mistral", "llama", 1024, 512, 128, 4, 352, 4, 2, 10000.0f, 1e-5f, false, false,
         "llama architecture with a sliding window of 8 in every layer (Mistral 7B v0.1), 4 layers (tests)", 0, 0, 0,
         0, 0, 8},
        {"tiny-llama3", "llama", 1024, 512, 128, 4, 352, 4, 2, 500000.0f, 1e-5f, false, true,
         "llama architecture with llama3 RoPE scaling, 4 layers, 128 wide (tests)"},
        {"small", "llama", 8192, 2048, 512, 8, 1408, 8, 4, 10000.0f, 1e-5f, false, false,
         "llama architecture, 8 layers, 512 wide, 33M parameters: steps of milliseconds (serving tests)"},
        {"qwen2.5-0.5b", "qwen2", 151936, 32768, 896, 24, 4864, 14, 2, 1000000.0f, 1e-6f, true, false,
         "Qwen2.5-0.5B shapes"},
        {"qwen3-0.6b", "qwen3", 151936, 40960, 1024, 28, 3072, 16, 8, 1000000.0f, 1e-6f, true, false,
         "Qwen3-0.6B shapes", 128},
        {"qwen3-1.7b", "qwen3", 151936, 40960, 2048, 28, 6144, 16, 8, 1000000.0f, 1e-6f, true, false,
         "Qwen3-1.7B shapes", 128},
        {"qwen3-4b", "qwen3", 151936, 40960, 2560, 36, 9728, 32, 8, 1000000.0f, 1e-6f, true, false,
         "Qwen3-4B shapes", 128},
        {"qwen3-8b", "qwen3", 151936, 40960, 4096, 36, 12288, 32, 8, 1000000.0f, 1e-6f, false, false,
         "Qwen3-8B shapes", 128},
        {"qwen3-30b-a3b", "qwen3moe", 151936, 40960, 2048, 48, 6144, 32, 4, 1000000.0f, 1e-6f, false, false,
         "Qwen3-30B-A3B shapes: 128 experts of 768, 8 per token (3.3B of 30.5B parameters active)", 128, 128, 8, 768},
        {"qwen1.5-moe-a2.7b", "qwen2moe", 151936, 8192, 2048, 24, 5632, 16, 16, 1000000.0f, 1e-6f, false, false,
         "Qwen1.5-MoE-A2.7B shapes: 60 experts of 1408, 4 per token, a shared expert of 5632", 0, 60, 4, 1408, 5632},
        {"phi3-mini", "phi3", 32064, 4096, 3072, 32, 8192, 32, 32, 10000.0f, 1e-5f, false, false,
         "Phi-3-mini-4k shapes, with its 2,047-token sliding window", 0, 0, 0, 0, 0, 2047},
        {"phi3-mini-128k", "phi3", 32064, 131072, 3072, 32, 8192, 32, 32, 10000.0f, 1e-5f, false, false,
         "Phi-3-mini-128k shapes: LongRoPE, long factors past 4,096 tokens (its 262,144-token window, longer than "
         "the context, left out)", 0, 0, 0, 0, 0, 0, 0.0f, 4096},
        {"gemma2-2b", "gemma2", 256000, 8192, 2304, 26, 9216, 8, 4, 10000.0f, 1e-6f, true, false,
         "Gemma-2-2B shapes (sliding window of 4,096 in every other layer)", 256, 0, 0, 0, 0, 4096},
        {"gemma2-9b", "gemma2", 256000, 8192, 3584, 42, 14336, 16, 8, 10000.0f, 1e-6f, true, false,
         "Gemma-2-9B shapes", 256, 0, 0, 0, 0, 4096},
        {"gemma3-1b", "gemma3", 262144, 32768, 1152, 26, 6912, 4, 1, 1000000.0f, 1e-6f, true, false,
         "Gemma-3-1B shapes (sliding window of 512 in 5 of 6 layers)", 256, 0, 0, 0, 0, 512},
        {"gemma3-4b", "gemma3", 262208, 131072, 2560, 34, 10240, 8, 4, 1000000.0f, 1e-6f, true, false,
         "Gemma-3-4B text shapes (sliding window of 1,024; global layers' RoPE scaled by 8)", 256, 0, 0, 0, 0, 1024,
         8.0f},
        {"gemma3-12b", "gemma3", 262208, 131072, 3840, 48, 15360, 16, 8, 1000000.0f, 1e-6f, true, false,
         "Gemma-3-12B text shapes", 256, 0, 0, 0, 0, 1024, 8.0f},
        {"gemma3-27b", "gemma3", 262208, 131072, 5376, 62, 21504, 32, 16, 1000000.0f, 1e-6f, true, false,
         "Gemma-3-27B text shapes", 128, 0, 0, 0, 0, 1024, 8.0f},
        {"mixtral-8x7b", "llama", 32000, 32768, 4096, 32, 14336, 32, 8, 1000000.0f, 1e-5f, false, false,
         "Mixtral-8x7B shapes: 8 experts of 14336, 2 per token (12.9B of 46.7B parameters active)", 0, 8, 2, 14336},
        {"tinyllama-1.1b", "llama", 32000, 2048, 2048, 22, 5632, 32, 4, 10000.0f, 1e-5f, false, false,
         "TinyLlama-1.1B shapes"},
        {"llama2-7b", "llama", 32000, 4096, 4096, 32, 11008, 32, 32, 10000.0f, 1e-5f, false, false,
         "Llama-2-7B shapes"},
        {"llama3-8b", "llama", 128256, 8192, 4096, 32, 14336, 32, 8, 500000.0f, 1e-5f, false, false,
         "Meta-Llama-3-8B shapes"},
        {"llama3.1-8b", "llama", 128256, 131072, 4096, 32, 14336, 32, 8, 500000.0f, 1e-5f, false, true,
         "Llama-3.1-8B shapes with llama3 RoPE scaling"},
        {"qwen2.5-1.5b", "qwen2", 151936, 32768, 1536, 28, 8960, 12, 2, 1000000.0f, 1e-6f, true, false,
         "Qwen2.5-1.5B shapes"},
        {"qwen2.5-7b", "qwen2", 152064, 32768, 3584, 28, 18944, 28, 4, 1000000.0f, 1e-6f, false, false,
         "Qwen2.5-7B shapes"},
        {"mistral-7b", "llama", 32000, 32768, 4096, 32, 14336, 32, 8, 10000.0f, 1e-5f, false, false,
         "Mistral-7B-v0.1 shapes, with its 4,096-token sliding window", 0, 0, 0, 0, 0, 4096},
        {"llama2-13b", "llama", 32000, 4096, 5120, 40, 13824, 40, 40, 10000.0f, 1e-5f, false, false,
         "Llama-2-13B shapes"},
        {"qwen2.5-32b", "qwen2", 152064, 32768, 5120, 64, 27648, 40, 8, 1000000.0f, 1e-5f, false, false,
         "Qwen2.5-32B shapes"},
        {"llama2-70b", "llama", 32000, 4096, 8192, 80, 28672, 64, 8, 10000.0f, 1e-5f, false, false,
         "Llama-2-70B shapes"},
        {"llama3-70b", "llama", 128256, 8192, 8192, 80, 28672, 64, 8, 500000.0f, 1e-5f, false, false,
         "Meta-Llama-3-70B shapes"},
    };
    return kPresets;
}

std::optional<ModelPreset> find_preset(std::string_view name) {
    for (const ModelPreset& preset : model_presets()) {
        if (preset.name == name) return preset;
    }
    return std::nullopt;
}

std::vector<float> llama3_rope_factors(int64_t head_dim, float freq_base, float factor, float low_freq_factor,
                                       float high_freq_factor, int64_t original_context) {
    const double low_freq_wavelen = static_cast<double>(original_context) / low_freq_factor;
    const double high_freq_wavelen = static_cast<double>(original_context) / high_freq_factor;
    std::vector<float> factors;
    for (int64_t dim_idx = 0; dim_idx < head_dim; dim_idx += 2) {
        const double frequency = 1.0 / std::pow(static_cast<double>(freq_base),
                                                static_cast<double>(dim_idx) / static_cast<double>(head_dim));
        const double wavelen = 2.0 * std::numbers::pi / frequency;
        if (wavelen < high_freq_wavelen) {
            factors.push_back(1.0f);
        } else if (wavelen > low_freq_wavelen) {
            factors.push_back(factor);
        } else {
            const double smooth = (static_cast<double>(original_context) / wavelen - low_freq_factor) /
                                  (high_freq_factor - low_freq_factor);
            factors.push_back(static_cast<float>(1.0 / ((1.0 - smooth) / factor + smooth)));
        }
    }
    return factors;
}

std::vector<float> longrope_factors(int64_t head_dim, float highest) {
    const int64_t pairs = head_dim / 2;
    std::vector<float> factors;
    for (int64_t pair_idx = 0; pair_idx < pairs; ++pair_idx) {
        const double fraction = pairs > 1 ? static_cast<double>(pair_idx) / static_cast<double>(pairs - 1) : 0.0;
        factors.push_back(static_cast<float>(std::pow(static_cast<double>(highest), fraction)));
    }
    return factors;
}

float longrope_attention_factor(int64_t context, int64_t original_context) {
    if (context <= original_context || original_context <= 1) return 1.0f;
    const double scale = static_cast<double>(context) / static_cast<double>(original_context);
    return static_cast<float>(std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(original_context))));
}

Status shrink_preset(ModelPreset* preset, int64_t num_layers, int64_t vocab_size, int64_t num_experts) {
    if (num_experts > 0 && preset->num_experts == 0) {
        return invalid_argument("preset '" + preset->name + "' has no experts");
    }
    if (num_layers > 0) preset->num_layers = num_layers;
    if (vocab_size > 0) preset->vocab_size = vocab_size;
    if (num_experts > 0) {
        preset->num_experts = num_experts;
        preset->num_experts_used = std::min(preset->num_experts_used, num_experts);
    }
    if (num_layers > 0 || vocab_size > 0 || num_experts > 0) {
        preset->description +=
            " at " + std::to_string(preset->num_layers) + " layers, " + std::to_string(preset->vocab_size) + " tokens";
        if (preset->num_experts > 0) preset->description += ", " + std::to_string(preset->num_experts) + " experts";
    }
    return Status::ok();
}

}  // namespace tern
