// A Hugging Face config.json as the converter needs it: the architecture family and hyper-parameters of
// llama-family (Llama, Mistral), Qwen2/3, Phi-3 and Gemma 2/3 checkpoints, with Hugging Face's defaults for absent
// keys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tern {

enum class RopeScalingKind { kNone, kLinear, kLlama3, kLongRope };

struct HfConfig {
    std::string hf_architecture;  // as config.json names it, e.g. "MistralForCausalLM"
    std::string architecture;     // the GGUF architecture: "llama", "qwen2", "qwen3", "phi3", "gemma2" or "gemma3"
    int64_t hidden_size = 0;
    int64_t num_layers = 0;
    int64_t num_heads = 0;
    int64_t num_kv_heads = 0;
    int64_t head_dim = 0;
    bool head_dim_given = false;   // config.json had head_dim (written as attention.key_length)
    int64_t intermediate_size = 0;
    int64_t context_length = 0;    // max_position_embeddings
    int64_t vocab_size = 0;
    float rms_norm_eps = 1e-6f;
    float rope_theta = 10000.0f;
    bool tie_word_embeddings = false;
    RopeScalingKind rope_scaling = RopeScalingKind::kNone;
    float rope_factor = 1.0f;
    float rope_low_freq_factor = 1.0f;   // llama3 scaling
    float rope_high_freq_factor = 4.0f;  // llama3 scaling
    int64_t rope_original_context = 8192;  // llama3 scaling; LongRoPE: original_max_position_embeddings
    // LongRoPE (Phi-3 128k, rope_scaling type "longrope" or "su"): head_dim / 2 frequency divisors each, and the
    // magnitude of cos and sin (rope_scaling.attention_factor, else derived from the two contexts).
    std::vector<float> rope_long_factors, rope_short_factors;
    float rope_attention_factor = 1.0f;
    // Special token ids as config.json gives them (a list, as Llama 3.1's eos, is left out).
    std::optional<int64_t> bos_token_id;
    std::optional<int64_t> eos_token_id;
    std::optional<int64_t> pad_token_id;
    std::optional<int64_t> unk_token_id;
    // Sliding windows and Gemma's extras (0: none).
    int64_t sliding_window = 0;
    float attn_logit_softcapping = 0.0f;
    float final_logit_softcapping = 0.0f;
    float rope_local_base_freq = 0.0f;  // Gemma 3's sliding layers
    int64_t num_experts = 0;            // Mixtral: num_local_experts (0: a dense feed-forward)
    int64_t num_experts_used = 0;       // num_experts_per_tok
    // Gemma3ForConditionalGeneration: the sizes come from text_config, the language model's tensors sit under
    // "language_model." and the vision tower's are left out.
    bool multimodal = false;

    bool is_gemma() const { return architecture == "gemma2" || architecture == "gemma3"; }

    int64_t q_dim() const { return num_heads * head_dim; }
    int64_t kv_dim() const { return num_kv_heads * head_dim; }
};

// Parses config.json text; `label` names the file in errors. An architecture tern does not convert, a missing or
// mistyped size, inconsistent head counts, an unsupported rope_scaling type or a Gemma whose attention scale or
// activation GGUF cannot express is an error.
Result<HfConfig> parse_hf_config(std::string_view text, const std::string& label);
Result<HfConfig> read_hf_config(const std::string& path);

}  // namespace tern
