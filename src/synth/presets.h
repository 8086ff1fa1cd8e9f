// Model shapes of real checkpoints, so synthetic models (random weights) have the real byte counts and
// compute: performance work and demos need no download.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tern {

struct ModelPreset {
    std::string name;
    std::string architecture;  // "llama", "qwen2", "qwen3", "qwen3moe", "qwen2moe", "phi3", "gemma2" or "gemma3"
    int64_t vocab_size;
    int64_t context_length;
    int64_t embedding_dim;
    int64_t num_layers;
    int64_t ffn_dim;
    int64_t num_heads;
    int64_t num_kv_heads;
    float rope_freq_base;
    float rms_norm_eps;
    bool tied_embeddings;
    bool llama3_rope_scaling;  // Llama 3.1: rope_freqs.weight with factor 8, low 1, high 4, original context 8192
    std::string description;
    int64_t head_dim = 0;  // 0: embedding_dim / num_heads (Qwen3's heads are wider: 128 at 1024 wide)
    int64_t num_experts = 0;       // a mixture of experts (qwen3moe): how many,
    int64_t num_experts_used = 0;  // how many each token uses,
    int64_t expert_ffn_dim = 0;    // and each one's width
    int64_t shared_expert_ffn_dim = 0;  // qwen2moe: the shared expert's width
    int64_t sliding_window = 0;         // sliding-window layers' reach (which layers slide: model/hparams.h)
    float rope_linear_factor = 0.0f;    // linear RoPE scaling (Gemma 3 4B and up: 8); 0: none
    int64_t longrope_original_context = 0;  // Phi-3 128k: LongRoPE factors, the short ones for this context; 0: none
    int64_t q_dim() const { return num_heads * (head_dim > 0 ? head_dim : embedding_dim / num_heads); }
    int64_t kv_dim() const { return num_kv_heads * (head_dim > 0 ? head_dim : embedding_dim / num_heads); }
};

const std::vector<ModelPreset>& model_presets();
std::optional<ModelPreset> find_preset(std::string_view name);

// A real model's widths and heads at fewer layers, a smaller vocabulary or (a mixture) fewer experts, each used
// per token kept when there are enough: what an architecture check needs, in megabytes rather than gigabytes. A
// value of 0 keeps the preset's. Fails when experts are asked of a preset that has none.
Status shrink_preset(ModelPreset* preset, int64_t num_layers, int64_t vocab_size, int64_t num_experts);

// Llama 3.1 RoPE frequency divisors for each rotation pair (as Hugging Face's `_compute_llama3_parameters`).
std::vector<float> llama3_rope_factors(int64_t head_dim, float freq_base, float factor, float low_freq_factor,
                                       float high_freq_factor, int64_t original_context);

// LongRoPE frequency divisors in the shape of Phi-3 128k's (which its config.json lists): rising geometrically over
// the rotation pairs from 1 to `highest`, the short factors gently (to 2), the long ones to context / original.
std::vector<float> longrope_factors(int64_t head_dim, float highest);
// The magnitude LongRoPE scales cos and sin by: sqrt(1 + ln(context / original) / ln(original)), 1 unless the
// context is longer (Hugging Face's Phi-3 and llama.cpp's converter).
float longrope_attention_factor(int64_t context, int64_t original_context);

}  // namespace tern
