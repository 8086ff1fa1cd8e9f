// Model shapes for capacity planning: layer counts and widths from a preset name, a GGUF file's metadata or a
// Hugging Face config.json. Shapes and byte counts only: no weight data is read or mapped into a model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "tensor/dtype.h"

namespace tern::plan {

struct ModelShape {
    std::string name;          // preset name or file path
    std::string source;        // "preset", "gguf" or "config.json"
    std::string architecture;  // "llama", "qwen2", ... (informational: the formulas do not depend on it)
    int64_t vocab_size = 0;
    int64_t context_length = 0;  // longest context the model was trained for; 0 when the source does not say
    int64_t embedding_dim = 0;
    int64_t num_layers = 0;
    int64_t ffn_dim = 0;
    int64_t num_heads = 0;
    int64_t num_kv_heads = 0;
    int64_t head_dim = 0;  // key and value length per head
    bool tied_embeddings = false;
    bool qkv_bias = false;        // qwen2 has q/k/v biases (f32 vectors; they barely change the byte count)
    int rope_factor_tensors = 0;  // head_dim/2 RoPE factors each: llama 3.1 one, LongRoPE (Phi-3 128k) two
    // A mixture of experts (0 experts: a dense feed-forward of ffn_dim): all experts are held in memory, a token's
    // step reads its num_experts_used only.
    int64_t num_experts = 0;
    int64_t num_experts_used = 0;
    int64_t expert_ffn_dim = 0;
    int64_t shared_expert_ffn_dim = 0;  // Qwen2-MoE's shared expert, which every token runs
    // Sliding-window layers (0: none): they attend to, and the engine keeps KV for, their last sliding_window
    // positions only (model/kv_groups.h).
    int64_t sliding_window = 0;
    int64_t num_sliding_layers = 0;

    // Set for a GGUF only: what its tensors really hold.
    std::optional<int64_t> file_num_params;
    std::optional<int64_t> file_weight_bytes;
    std::optional<int64_t> file_matmul_params;  // params a decode step reads (the embedding table is only looked up)
    std::optional<int64_t> file_matmul_bytes;
    std::optional<DType> file_weight_type;  // the type holding most of the matrix bytes

    int64_t q_dim() const { return num_heads * head_dim; }
    int64_t kv_dim() const { return num_kv_heads * head_dim; }
};

// How many of `num_layers` layers slide when a model of `architecture` has a window: every layer but each
// `pattern`-th (gemma2: 2, gemma3: 6, as model/hparams.h's is_sliding_layer), or all (pattern 0: Mistral, Phi-3).
int64_t count_sliding_layers(std::string_view architecture, int64_t num_layers, std::optional<int64_t> pattern = {});

// Checks positive sizes and that query heads group evenly over KV heads; `label` names the source in errors.
Status validate_shape(const ModelShape& shape, std::string_view label);

Result<ModelShape> model_shape_from_preset(std::string_view name);
Result<ModelShape> model_shape_from_gguf(const std::string& path);
Result<ModelShape> model_shape_from_config_json(const std::string& path);
// Parses config.json text; `label` names it in errors.
Result<ModelShape> model_shape_from_config_text(const std::string& text, const std::string& label);

// A preset name, a GGUF file, a config.json file, or a folder holding a config.json.
Result<ModelShape> load_model_shape(const std::string& spec);

// "llama2-7b, llama3-8b, ..." (the synth presets that are real model shapes, not the tiny test ones).
std::string model_preset_names();

}  // namespace tern::plan
