// Hyper-parameters of the architectures tern computes (llama, qwen2, qwen3, qwen3moe, qwen2moe, phi3, gemma2, gemma3),
// read from GGUF metadata ("{arch}.block_count", ...).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "formats/gguf.h"
#include "kv/sliding_layers.h"

namespace tern {

// qwen3 is qwen2 without the q/k/v biases and with an RMSNorm over each q and k head before RoPE; qwen3moe is
// qwen3 whose feed-forward is a mixture of experts; qwen2moe is qwen2 whose feed-forward is a mixture of experts plus
// a shared expert; phi3 is llama with fused q/k/v and gate/up matrices and RoPE over halves; gemma2 scales the
// embedding by sqrt(width), norms each block's output too (post-norms), uses GeGLU and soft-caps attention scores and
// logits, with sliding-window and global layers alternating; gemma3 is gemma2 with q/k head norms instead of the soft
// caps, five sliding layers to one global and a RoPE base of its own for each kind. Mixtral is llama with experts.
enum class Architecture { kLlama, kQwen2, kQwen3, kQwen3Moe, kQwen2Moe, kPhi3, kGemma2, kGemma3 };

// The gate's nonlinearity of a gated feed-forward: SwiGLU (silu) or GeGLU (gelu, tanh form).
enum class FfnActivation { kSilu, kGelu };

// How RoPE pairs the dimensions of a head: llama GGUFs store q/k permuted so adjacent elements pair up
// (ggml's "normal" mode); qwen2 pairs element i with i + rope_dim/2 (ggml's "neox" mode).
enum class RopeStyle { kAdjacentPairs, kHalves };

struct HParams {
    Architecture architecture = Architecture::kLlama;
    std::string architecture_name;
    int64_t vocab_size = 0;
    int64_t context_length = 0;
    int64_t embedding_dim = 0;
    int64_t num_layers = 0;
    int64_t ffn_dim = 0;
    int64_t num_heads = 0;
    int64_t num_kv_heads = 0;
    int64_t head_dim = 0;       // key/value length per head
    int64_t rope_dim = 0;       // dimensions of a head that RoPE rotates (<= head_dim)
    float rms_norm_eps = 1e-5f;
    float rope_freq_base = 10000.0f;
    float rope_position_scale = 1.0f;  // linear RoPE scaling: positions are multiplied by this (1 / factor)
    // LongRoPE (Phi-3 128k): the context its short factors are for (the long ones serve longer contexts), and the
    // factor RoPE's cos and sin are scaled by (sqrt(1 + ln(context / original) / ln(original)), from the file).
    int64_t rope_original_context = 0;
    float rope_attention_factor = 1.0f;
    RopeStyle rope_style = RopeStyle::kAdjacentPairs;
    // Mixture of experts (0 experts: a dense feed-forward of ffn_dim): each token's feed-forward is the weighted sum of
    // the num_experts_used experts (of expert_ffn_dim each) its router ranks highest.
    int64_t num_experts = 0;
    int64_t num_experts_used = 0;
    int64_t expert_ffn_dim = 0;
    // Whether the chosen experts' weights are renormalized to sum to 1 (Qwen3-MoE), or stay softmax probabilities
    // over all experts (Qwen2-MoE).
    bool renormalize_experts = true;
    int64_t shared_expert_ffn_dim = 0;  // Qwen2-MoE: an expert every token runs, gated by a sigmoid; 0: none

    // Sliding-window attention (0: none): a sliding layer's query attends only to its last sliding_window positions.
    // Which layers slide: all (pattern 0: Mistral, Phi-3), or every layer but each pattern-th (Gemma 2: 2, Gemma 3:
    // 6), as llama.cpp's set_swa_pattern.
    int64_t sliding_window = 0;
    int64_t sliding_window_pattern = 0;
    // Gemma 3's sliding layers rotate with their own base and no position scaling; 0: as the global layers.
    float rope_freq_base_sliding = 0.0f;
    float attention_scale = 0.0f;    // scores are q . k * this; 0: 1 / sqrt(head_dim)
    float attention_softcap = 0.0f;  // Gemma 2: scores become c * tanh(score / c); 0: none
    float logit_softcap = 0.0f;      // Gemma 2: the final logits likewise
    float embedding_scale = 1.0f;    // Gemma: token embeddings are multiplied by sqrt(embedding_dim)
    FfnActivation ffn_activation = FfnActivation::kSilu;

    bool is_moe() const { return num_experts > 0; }
    bool has_head_norms() const {
        return architecture == Architecture::kQwen3 || architecture == Architecture::kQwen3Moe ||
               architecture == Architecture::kGemma3;
    }
    // Gemma: an RMSNorm of each block's output before it joins the residual stream.
    bool has_post_norms() const {
        return architecture == Architecture::kGemma2 || architecture == Architecture::kGemma3;
    }
    bool is_sliding_layer(int64_t layer) const {
        if (sliding_window <= 0) return false;
        return kv::layer_slides(layer, sliding_window_pattern);
    }
    bool has_sliding_layers() const { return sliding_window > 0; }
    float scores_scale() const {
        return attention_scale > 0.0f ? attention_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
    }
    bool has_qkv_bias() const {
        return architecture == Architecture::kQwen2 || architecture == Architecture::kQwen2Moe;
    }

    int64_t q_dim() const { return num_heads * head_dim; }
    int64_t kv_dim() const { return num_kv_heads * head_dim; }
    // Bytes of K and V for one token across all layers, at `bytes_per_element`.
    int64_t kv_bytes_per_token(int64_t bytes_per_element) const {
        return 2 * num_layers * kv_dim() * bytes_per_element;
    }
    // Operations (a multiply-add is 2) of one token's matrix products: q, k, v, o, gate, up and down in every layer,
    // and the output matrix. Attention over the cache, which grows with the context, is not counted.
    int64_t matmul_ops_per_token() const {
        const int64_t ffn = is_moe() ? num_experts_used * expert_ffn_dim : ffn_dim;  // the experts a token runs
        const int64_t per_layer = embedding_dim * (2 * q_dim() + 2 * kv_dim() + 3 * ffn + num_experts);
        return 2 * (num_layers * per_layer + embedding_dim * vocab_size);
    }
};

Result<HParams> hparams_from_gguf(const GgufFile& file);

}  // namespace tern
