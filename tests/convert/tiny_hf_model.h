// A tiny Hugging Face model folder written by the tests: config.json, model.safetensors with deterministic
// weights under Hugging Face's tensor names, and a small byte-level BPE tokenizer.json.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "safetensors_builder.h"

namespace tern::testing {

struct TinyModelSpec {
    std::string architecture = "LlamaForCausalLM";
    int64_t hidden = 16;
    int64_t heads = 4;
    int64_t kv_heads = 2;
    int64_t ffn = 24;
    int64_t layers = 2;
    int64_t vocab = 8;
    bool tie = false;
    std::string matrix_dtype = "F32";  // "F32", "F16" or "BF16"; vectors are always F32

    int64_t explicit_head_dim = 0;     // config.json's head_dim (Qwen3: wider than hidden / heads); 0: none

    bool is_qwen2() const { return architecture == "Qwen2ForCausalLM"; }
    bool is_qwen3() const { return architecture == "Qwen3ForCausalLM"; }
    bool is_phi3() const { return architecture == "Phi3ForCausalLM"; }
    bool is_mixtral() const { return architecture == "MixtralForCausalLM"; }
    bool is_gemma() const { return architecture == "Gemma2ForCausalLM" || architecture == "Gemma3ForCausalLM"; }
    int64_t head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : hidden / heads; }
};

struct TinyTensor {
    std::vector<int64_t> shape;
    std::vector<float> values;  // exactly representable in the tensor's dtype
    std::string dtype;
};

inline nlohmann::json tiny_config(const TinyModelSpec& spec) {
    nlohmann::json config = {{"architectures", {spec.architecture}},
            {"hidden_size", spec.hidden},
            {"num_hidden_layers", spec.layers},
            {"num_attention_heads", spec.heads},
            {"num_key_value_heads", spec.kv_heads},
            {"intermediate_size", spec.ffn},
            {"vocab_size", spec.vocab},
            {"max_position_embeddings", 64},
            {"rms_norm_eps", 1e-5},
            {"rope_theta", 10000.0},
            {"tie_word_embeddings", spec.tie},
            {"bos_token_id", 1},
            {"eos_token_id", 2}};
    if (spec.explicit_head_dim > 0) config["head_dim"] = spec.explicit_head_dim;
    if (spec.is_mixtral()) {
        config["num_local_experts"] = 4;
        config["num_experts_per_tok"] = 2;
    }
    if (spec.is_gemma()) {  // as Gemma's config.json files hold them
        config["head_dim"] = spec.head_dim();
        config["query_pre_attn_scalar"] = spec.head_dim();
        config["sliding_window"] = 8;
        config["hidden_activation"] = "gelu_pytorch_tanh";
        if (spec.architecture == "Gemma2ForCausalLM") {
            config["attn_logit_softcapping"] = 50.0;
            config["final_logit_softcapping"] = 30.0;
        } else {
            config["rope_local_base_freq"] = 10000.0;
            config["rope_theta"] = 1000000.0;
        }
    }
    return config;
}

// Every tensor of the spec's checkpoint, by Hugging Face name, with values that differ per tensor and element.
inline std::map<std::string, TinyTensor> tiny_tensors(const TinyModelSpec& spec) {
    std::map<std::string, TinyTensor> tensors;
    int tensor_idx = 0;
    auto add = [&](const std::string& name, std::vector<int64_t> shape) {
        int64_t count = 1;
        for (int64_t dim : shape) count *= dim;
        const bool is_matrix = shape.size() == 2;
        TinyTensor tensor{shape, {}, is_matrix ? spec.matrix_dtype : "F32"};
        ++tensor_idx;
        for (int64_t idx = 0; idx < count; ++idx) {
            float value = static_cast<float>(std::sin(0.37 * static_cast<double>(idx) + 1.3 * tensor_idx) * 0.2);
            if (!is_matrix) value += 1.0f;
            if (tensor.dtype == "F16") value = fp16_to_fp32(fp32_to_fp16(value));
            if (tensor.dtype == "BF16") value = bf16_to_fp32(fp32_to_bf16(value));
            tensor.values.push_back(value);
        }
        tensors[name] = std::move(tensor);
    };
    const int64_t q_dim = spec.heads * spec.head_dim();
    const int64_t kv_dim = spec.kv_heads * spec.head_dim();
    add("model.embed_tokens.weight", {spec.vocab, spec.hidden});
    add("model.norm.weight", {spec.hidden});
    if (!spec.tie) add("lm_head.weight", {spec.vocab, spec.hidden});
    for (int64_t layer = 0; layer < spec.layers; ++layer) {
        const std::string prefix = "model.layers." + std::to_string(layer) + ".";
        add(prefix + "input_layernorm.weight", {spec.hidden});
        add(prefix + "post_attention_layernorm.weight", {spec.hidden});
        if (spec.is_gemma()) {
            add(prefix + "pre_feedforward_layernorm.weight", {spec.hidden});
            add(prefix + "post_feedforward_layernorm.weight", {spec.hidden});
        }
        if (spec.is_phi3()) {  // fused
            add(prefix + "self_attn.qkv_proj.weight", {q_dim + 2 * kv_dim, spec.hidden});
            add(prefix + "self_attn.o_proj.weight", {spec.hidden, q_dim});
            add(prefix + "mlp.gate_up_proj.weight", {2 * spec.ffn, spec.hidden});
            add(prefix + "mlp.down_proj.weight", {spec.hidden, spec.ffn});
            continue;
        }
        add(prefix + "self_attn.q_proj.weight", {q_dim, spec.hidden});
        add(prefix + "self_attn.k_proj.weight", {kv_dim, spec.hidden});
        add(prefix + "self_attn.v_proj.weight", {kv_dim, spec.hidden});
        add(prefix + "self_attn.o_proj.weight", {spec.hidden, q_dim});
        if (spec.is_qwen2()) {
            add(prefix + "self_attn.q_proj.bias", {q_dim});
            add(prefix + "self_attn.k_proj.bias", {kv_dim});
            add(prefix + "self_attn.v_proj.bias", {kv_dim});
        }
        if (spec.is_qwen3() || spec.architecture == "Gemma3ForCausalLM") {
            add(prefix + "self_attn.q_norm.weight", {spec.head_dim()});
            add(prefix + "self_attn.k_norm.weight", {spec.head_dim()});
        }
        if (spec.is_mixtral()) {  // 4 experts: w1 gate, w3 up, w2 down
            add(prefix + "block_sparse_moe.gate.weight", {4, spec.hidden});
            for (int expert = 0; expert < 4; ++expert) {
                const std::string name = prefix + "block_sparse_moe.experts." + std::to_string(expert) + ".";
                add(name + "w1.weight", {spec.ffn, spec.hidden});
                add(name + "w3.weight", {spec.ffn, spec.hidden});
                add(name + "w2.weight", {spec.hidden, spec.ffn});
            }
            continue;
        }
        add(prefix + "mlp.gate_proj.weight", {spec.ffn, spec.hidden});
        add(prefix + "mlp.up_proj.weight", {spec.ffn, spec.hidden});
        add(prefix + "mlp.down_proj.weight", {spec.hidden, spec.ffn});
    }
    return tensors;
}

inline std::vector<uint8_t> safetensors_of(const std::map<std::string, TinyTensor>& tensors) {
    SafetensorsBuilder builder;
    for (const auto& [name, tensor] : tensors) {
        if (tensor.dtype == "F32") {
            builder.add_f32(name, tensor.shape, tensor.values);
        } else {
            builder.add_half(name, tensor.dtype, tensor.shape, tensor.values);
        }
    }
    return builder.bytes();
}

// A byte-level BPE tokenizer over the letters a-d: single letters, two merges, then an added control token,
// padded to `vocab` by the converter.
inline nlohmann::json tiny_bpe_tokenizer() {
    return {{"model", {{"type", "BPE"},
                       {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"d", 3}, {"ab", 4}, {"abc", 5}}},
                       {"merges", {"a b", "ab c"}}}},
            {"added_tokens", {{{"id", 6}, {"content", "<|end|>"}, {"special", true}}}},
            {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
            {"decoder", {{"type", "ByteLevel"}}}};
}

// Writes the whole folder; returns its tensors for comparison.
inline std::map<std::string, TinyTensor> write_tiny_model(const std::filesystem::path& dir, const TinyModelSpec& spec) {
    std::map<std::string, TinyTensor> tensors = tiny_tensors(spec);
    write_text(dir / "config.json", tiny_config(spec).dump(2));
    write_bytes(dir / "model.safetensors", safetensors_of(tensors));
    write_text(dir / "tokenizer.json", tiny_bpe_tokenizer().dump());
    return tensors;
}

}  // namespace tern::testing
