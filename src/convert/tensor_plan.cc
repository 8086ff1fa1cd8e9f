#include "convert/tensor_plan.h"

#include <fmt/format.h>

namespace tern {
namespace {

class PlanBuilder {
public:
    explicit PlanBuilder(std::vector<TensorPlan>* plans) : plans_(plans) {}

    void matrix(std::string hf_name, std::string gguf_name, int64_t rows, int64_t row_length, int64_t rope_heads = 0) {
        plans_->push_back({std::move(hf_name), std::move(gguf_name), {rows, row_length}, rope_heads, false, false});
    }
    void vector(std::string hf_name, std::string gguf_name, int64_t length, float add = 0.0f) {
        plans_->push_back({std::move(hf_name), std::move(gguf_name), {length}, 0, true, false, add});
    }
    void experts(std::string hf_pattern, std::string gguf_name, int64_t rows, int64_t row_length, int64_t count) {
        plans_->push_back({std::move(hf_pattern), std::move(gguf_name), {rows, row_length}, 0, false, false, 0.0f,
                           count});
    }

private:
    std::vector<TensorPlan>* plans_;
};

// Gemma: Gemma2/3DecoderLayer's four norms and Gemma3's q/k norms, each stored as 1 + w (as llama.cpp's converter
// does), and a llama layer otherwise without RoPE permutation (Gemma rotates halves).
void plan_gemma_layer(const HfConfig& config, const std::string& hf, const std::string& gguf, PlanBuilder& builder) {
    const int64_t hidden = config.hidden_size;
    builder.vector(hf + "input_layernorm.weight", gguf + "attn_norm.weight", hidden, 1.0f);
    builder.matrix(hf + "self_attn.q_proj.weight", gguf + "attn_q.weight", config.q_dim(), hidden);
    builder.matrix(hf + "self_attn.k_proj.weight", gguf + "attn_k.weight", config.kv_dim(), hidden);
    builder.matrix(hf + "self_attn.v_proj.weight", gguf + "attn_v.weight", config.kv_dim(), hidden);
    if (config.architecture == "gemma3") {
        builder.vector(hf + "self_attn.q_norm.weight", gguf + "attn_q_norm.weight", config.head_dim, 1.0f);
        builder.vector(hf + "self_attn.k_norm.weight", gguf + "attn_k_norm.weight", config.head_dim, 1.0f);
    }
    builder.matrix(hf + "self_attn.o_proj.weight", gguf + "attn_output.weight", hidden, config.q_dim());
    builder.vector(hf + "post_attention_layernorm.weight", gguf + "post_attention_norm.weight", hidden, 1.0f);
    builder.vector(hf + "pre_feedforward_layernorm.weight", gguf + "ffn_norm.weight", hidden, 1.0f);
    builder.vector(hf + "post_feedforward_layernorm.weight", gguf + "post_ffw_norm.weight", hidden, 1.0f);
    builder.matrix(hf + "mlp.gate_proj.weight", gguf + "ffn_gate.weight", config.intermediate_size, hidden);
    builder.matrix(hf + "mlp.up_proj.weight", gguf + "ffn_up.weight", config.intermediate_size, hidden);
    builder.matrix(hf + "mlp.down_proj.weight", gguf + "ffn_down.weight", hidden, config.intermediate_size);
}

// Mixtral's sparse block: the router, then each expert's w1 (gate), w3 (up) and w2 (down) stacked per kind into
// llama.cpp's 3-D ffn_*_exps tensors.
void plan_mixtral_experts(const HfConfig& config, const std::string& hf, const std::string& gguf,
                          PlanBuilder& builder) {
    const int64_t hidden = config.hidden_size, width = config.intermediate_size, count = config.num_experts;
    const std::string expert = hf + "block_sparse_moe.experts.{expert}.";
    builder.matrix(hf + "block_sparse_moe.gate.weight", gguf + "ffn_gate_inp.weight", count, hidden);
    builder.experts(expert + "w1.weight", gguf + "ffn_gate_exps.weight", width, hidden, count);
    builder.experts(expert + "w3.weight", gguf + "ffn_up_exps.weight", width, hidden, count);
    builder.experts(expert + "w2.weight", gguf + "ffn_down_exps.weight", hidden, width, count);
}

void plan_layer(const HfConfig& config, int64_t layer_idx, PlanBuilder& builder) {
    const std::string hf = fmt::format("model.layers.{}.", layer_idx);
    const std::string gguf = fmt::format("blk.{}.", layer_idx);
    const bool is_llama = config.architecture == "llama";
    const int64_t hidden = config.hidden_size;
    if (config.is_gemma()) return plan_gemma_layer(config, hf, gguf, builder);
    builder.vector(hf + "input_layernorm.weight", gguf + "attn_norm.weight", hidden);
    if (config.architecture == "phi3") {  // q/k/v and gate/up stay fused, as llama.cpp's phi3 files hold them
        builder.matrix(hf + "self_attn.qkv_proj.weight", gguf + "attn_qkv.weight", config.q_dim() + 2 * config.kv_dim(),
                       hidden);
        builder.matrix(hf + "self_attn.o_proj.weight", gguf + "attn_output.weight", hidden, config.q_dim());
        builder.vector(hf + "post_attention_layernorm.weight", gguf + "ffn_norm.weight", hidden);
        builder.matrix(hf + "mlp.gate_up_proj.weight", gguf + "ffn_up.weight", 2 * config.intermediate_size, hidden);
        builder.matrix(hf + "mlp.down_proj.weight", gguf + "ffn_down.weight", hidden, config.intermediate_size);
        return;
    }
    builder.matrix(hf + "self_attn.q_proj.weight", gguf + "attn_q.weight", config.q_dim(), hidden,
                   is_llama ? config.num_heads : 0);
    builder.matrix(hf + "self_attn.k_proj.weight", gguf + "attn_k.weight", config.kv_dim(), hidden,
                   is_llama ? config.num_kv_heads : 0);
    builder.matrix(hf + "self_attn.v_proj.weight", gguf + "attn_v.weight", config.kv_dim(), hidden);
    if (config.architecture == "qwen2") {
        builder.vector(hf + "self_attn.q_proj.bias", gguf + "attn_q.bias", config.q_dim());
        builder.vector(hf + "self_attn.k_proj.bias", gguf + "attn_k.bias", config.kv_dim());
        builder.vector(hf + "self_attn.v_proj.bias", gguf + "attn_v.bias", config.kv_dim());
    }
    if (config.architecture == "qwen3") {
        builder.vector(hf + "self_attn.q_norm.weight", gguf + "attn_q_norm.weight", config.head_dim);
        builder.vector(hf + "self_attn.k_norm.weight", gguf + "attn_k_norm.weight", config.head_dim);
    }
    builder.matrix(hf + "self_attn.o_proj.weight", gguf + "attn_output.weight", hidden, config.q_dim());
    builder.vector(hf + "post_attention_layernorm.weight", gguf + "ffn_norm.weight", hidden);
    if (config.num_experts > 0) return plan_mixtral_experts(config, hf, gguf, builder);
    builder.matrix(hf + "mlp.gate_proj.weight", gguf + "ffn_gate.weight", config.intermediate_size, hidden);
    builder.matrix(hf + "mlp.up_proj.weight", gguf + "ffn_up.weight", config.intermediate_size, hidden);
    builder.matrix(hf + "mlp.down_proj.weight", gguf + "ffn_down.weight", hidden, config.intermediate_size);
}

}  // namespace

std::vector<TensorPlan> plan_tensors(const HfConfig& config) {
    std::vector<TensorPlan> plans;
    PlanBuilder builder(&plans);
    builder.matrix("model.embed_tokens.weight", "token_embd.weight", config.vocab_size, config.hidden_size);
    builder.vector("model.norm.weight", "output_norm.weight", config.hidden_size, config.is_gemma() ? 1.0f : 0.0f);
    builder.matrix("lm_head.weight", "output.weight", config.vocab_size, config.hidden_size);
    plans.back().optional = true;
    for (int64_t layer_idx = 0; layer_idx < config.num_layers; ++layer_idx) plan_layer(config, layer_idx, builder);
    return plans;
}

std::string TensorPlan::part_name(int64_t expert) const {
    if (num_experts == 0) return hf_name;
    std::string name = hf_name;
    const std::string marker = "{expert}";
    name.replace(name.find(marker), marker.size(), std::to_string(expert));
    return name;
}

bool is_skipped_hf_tensor(std::string_view name) { return name.ends_with(".rotary_emb.inv_freq"); }

int64_t rope_source_row(int64_t row, int64_t num_rows, int64_t num_heads) {
    const int64_t rows_per_head = num_rows / num_heads;
    const int64_t half = rows_per_head / 2;
    const int64_t head_start = row / rows_per_head * rows_per_head;
    const int64_t local = row - head_start;
    return head_start + (local % 2) * half + local / 2;
}

}  // namespace tern
