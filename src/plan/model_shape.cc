#include "plan/model_shape.h"

#include "formats/strict_json.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "formats/gguf.h"
#include "kv/sliding_layers.h"
#include "synth/presets.h"

namespace tern::plan {
namespace {

constexpr int64_t kMaxDimension = int64_t{1} << 32;

Status read_gguf_positive(const GgufFile& file, const std::string& key, int64_t* out) {
    const std::optional<int64_t> value = file.get_int(key);
    if (!value) return invalid_argument(fmt::format("{}: missing metadata key '{}' (an integer)", file.path(), key));
    if (*value <= 0 || *value > kMaxDimension) {
        return invalid_argument(fmt::format("{}: metadata '{}' is {}; it must be positive", file.path(), key, *value));
    }
    *out = *value;
    return Status::ok();
}

// head_count_kv is an integer in llama/qwen2 files; some architectures store one value per layer.
int64_t read_gguf_kv_heads(const GgufFile& file, const std::string& key, int64_t fallback) {
    if (const std::optional<int64_t> value = file.get_int(key)) return *value;
    const GgufValue* array = file.find(key);
    if (array == nullptr || array->type != GgufType::kArray) return fallback;
    int64_t largest = 0;
    for (const GgufValue& item : array->array) largest = std::max(largest, item.int_value);
    return largest > 0 ? largest : fallback;
}

void add_file_bytes(const GgufFile& file, ModelShape* shape) {
    const bool tied = file.find_tensor("output.weight") == nullptr;
    int64_t num_params = 0, weight_bytes = 0, matmul_params = 0, matmul_bytes = 0;
    std::map<DType, int64_t> matrix_bytes_by_type;
    for (const GgufTensorInfo& info : file.tensors()) {
        num_params += info.num_elements;
        weight_bytes += info.num_bytes;
        if (info.dims.size() >= 2) matrix_bytes_by_type[info.type] += info.num_bytes;
        if (info.name == "token_embd.weight" && !tied) continue;  // looked up row by row, not read whole
        // A 3-D expert tensor: a token's step reads the experts it uses only.
        const bool experts = info.dims.size() == 3 && shape->num_experts > 0;
        const int64_t read_share = experts ? shape->num_experts_used : 1, of = experts ? shape->num_experts : 1;
        matmul_params += info.num_elements / of * read_share;
        matmul_bytes += info.num_bytes / of * read_share;
    }
    shape->tied_embeddings = tied;
    shape->file_num_params = num_params;
    shape->file_weight_bytes = weight_bytes;
    shape->file_matmul_params = matmul_params;
    shape->file_matmul_bytes = matmul_bytes;
    int64_t most = -1;
    for (const auto& [type, bytes] : matrix_bytes_by_type) {
        if (bytes > most) most = bytes, shape->file_weight_type = type;
    }
}

// Reads `key` as a positive integer from a JSON object; `required` makes its absence an error.
Status read_json_int(const nlohmann::json& config, const char* key, const std::string& label, bool required,
                     int64_t* out) {
    const auto found = config.find(key);
    if (found == config.end() || found->is_null()) {
        if (!required) return Status::ok();
        return invalid_argument(
            fmt::format("{}: missing key \"{}\" (an integer); is this a decoder-only model's "
                        "config.json?",
                        label, key));
    }
    if (!found->is_number_integer() || found->get<int64_t>() <= 0 || found->get<int64_t>() > kMaxDimension) {
        return invalid_argument(
            fmt::format("{}: \"{}\" is {}; it must be a positive integer", label, key, found->dump()));
    }
    *out = found->get<int64_t>();
    return Status::ok();
}

// config.json's window: Gemma's and Mistral's sliding_window; Qwen2 configs carry one they switch off.
void read_config_window(const nlohmann::json& config, ModelShape* shape) {
    const auto window = config.find("sliding_window");
    if (window == config.end() || !window->is_number_integer() || window->get<int64_t>() <= 0) return;
    const auto use = config.find("use_sliding_window");
    if (use != config.end() && use->is_boolean() && !use->get<bool>()) return;
    if (shape->architecture.starts_with("qwen")) return;
    shape->sliding_window = window->get<int64_t>();
    const auto pattern = config.find("sliding_window_pattern");
    const bool has_pattern = pattern != config.end() && pattern->is_number_integer();
    shape->num_sliding_layers = count_sliding_layers(shape->architecture, shape->num_layers,
                                                     has_pattern ? std::optional(pattern->get<int64_t>())
                                                                 : std::nullopt);
}

Result<ModelShape> shape_from_config_object(const nlohmann::json& config, const std::string& label) {
    for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts"}) {
        if (config.contains(key) && !config[key].is_null()) {
            return invalid_argument(
                fmt::format("{}: mixture-of-experts models (\"{}\") are not supported by the "
                            "planner yet",
                            label, key));
        }
    }
    ModelShape shape;
    shape.name = label;
    shape.source = "config.json";
    shape.architecture = config.value("model_type", std::string("unknown"));
    TERN_RETURN_IF_ERROR(read_json_int(config, "num_hidden_layers", label, true, &shape.num_layers));
    TERN_RETURN_IF_ERROR(read_json_int(config, "hidden_size", label, true, &shape.embedding_dim));
    TERN_RETURN_IF_ERROR(read_json_int(config, "num_attention_heads", label, true, &shape.num_heads));
    TERN_RETURN_IF_ERROR(read_json_int(config, "intermediate_size", label, true, &shape.ffn_dim));
    TERN_RETURN_IF_ERROR(read_json_int(config, "vocab_size", label, true, &shape.vocab_size));
    shape.num_kv_heads = shape.num_heads;
    TERN_RETURN_IF_ERROR(read_json_int(config, "num_key_value_heads", label, false, &shape.num_kv_heads));
    shape.head_dim = shape.embedding_dim / shape.num_heads;
    TERN_RETURN_IF_ERROR(read_json_int(config, "head_dim", label, false, &shape.head_dim));
    TERN_RETURN_IF_ERROR(read_json_int(config, "max_position_embeddings", label, false, &shape.context_length));
    const auto tied = config.find("tie_word_embeddings");
    shape.tied_embeddings = tied != config.end() && tied->is_boolean() && tied->get<bool>();
    const auto bias = config.find("attention_bias");
    const bool qwen2_family = shape.architecture == "qwen2" || shape.architecture == "qwen2_moe";
    shape.qkv_bias = qwen2_family || (bias != config.end() && bias->is_boolean() && bias->get<bool>());
    // Qwen3-MoE / Qwen2-MoE / Mixtral spellings of a mixture of experts.
    for (const char* key : {"num_experts", "num_local_experts"}) {
        TERN_RETURN_IF_ERROR(read_json_int(config, key, label, false, &shape.num_experts));
    }
    TERN_RETURN_IF_ERROR(read_json_int(config, "num_experts_per_tok", label, false, &shape.num_experts_used));
    shape.expert_ffn_dim = shape.num_experts > 0 ? shape.ffn_dim : 0;
    TERN_RETURN_IF_ERROR(read_json_int(config, "moe_intermediate_size", label, false, &shape.expert_ffn_dim));
    TERN_RETURN_IF_ERROR(
        read_json_int(config, "shared_expert_intermediate_size", label, false, &shape.shared_expert_ffn_dim));
    read_config_window(config, &shape);
    TERN_RETURN_IF_ERROR(validate_shape(shape, label));
    return shape;
}

}  // namespace

int64_t count_sliding_layers(std::string_view architecture, int64_t num_layers, std::optional<int64_t> pattern) {
    const int64_t every = pattern.value_or(kv::default_sliding_pattern(architecture));
    int64_t count = 0;
    for (int64_t layer = 0; layer < num_layers; ++layer) count += kv::layer_slides(layer, every) ? 1 : 0;
    return count;
}

Status validate_shape(const ModelShape& shape, std::string_view label) {
    const std::pair<const char*, int64_t> sizes[] = {
        {"layers", shape.num_layers},         {"embedding width", shape.embedding_dim},
        {"attention heads", shape.num_heads}, {"KV heads", shape.num_kv_heads},
        {"head dimension", shape.head_dim},   {"FFN width", shape.ffn_dim},
        {"vocabulary", shape.vocab_size}};
    for (const auto& [what, value] : sizes) {
        if (value <= 0 || value > kMaxDimension) {
            return invalid_argument(fmt::format("{}: {} is {}; it must be positive", label, what, value));
        }
    }
    if (shape.num_heads % shape.num_kv_heads != 0) {
        return invalid_argument(fmt::format("{}: {} attention heads cannot be grouped over {} KV heads", label,
                                            shape.num_heads, shape.num_kv_heads));
    }
    return Status::ok();
}

Result<ModelShape> model_shape_from_preset(std::string_view name) {
    const std::optional<ModelPreset> preset = find_preset(name);
    if (!preset) {
        return invalid_argument(
            fmt::format("unknown model preset '{}'; choose one of: {}", name, model_preset_names()));
    }
    ModelShape shape;
    shape.name = preset->name;
    shape.source = "preset";
    shape.architecture = preset->architecture;
    shape.vocab_size = preset->vocab_size;
    shape.context_length = preset->context_length;
    shape.embedding_dim = preset->embedding_dim;
    shape.num_layers = preset->num_layers;
    shape.ffn_dim = preset->ffn_dim;
    shape.num_heads = preset->num_heads;
    shape.num_kv_heads = preset->num_kv_heads;
    shape.head_dim = preset->q_dim() / preset->num_heads;
    shape.tied_embeddings = preset->tied_embeddings;
    shape.qkv_bias = preset->architecture == "qwen2" || preset->architecture == "qwen2moe";
    shape.num_experts = preset->num_experts;
    shape.num_experts_used = preset->num_experts_used;
    shape.expert_ffn_dim = preset->expert_ffn_dim;
    shape.shared_expert_ffn_dim = preset->shared_expert_ffn_dim;
    shape.rope_factor_tensors = preset->llama3_rope_scaling ? 1 : preset->longrope_original_context > 0 ? 2 : 0;
    shape.sliding_window = preset->sliding_window;
    if (shape.sliding_window > 0) shape.num_sliding_layers = count_sliding_layers(shape.architecture, shape.num_layers);
    TERN_RETURN_IF_ERROR(validate_shape(shape, shape.name));
    return shape;
}

Result<ModelShape> model_shape_from_gguf(const std::string& path) {
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(path));
    const std::optional<std::string> arch = file->get_string("general.architecture");
    if (!arch) return invalid_argument(path + ": missing metadata key 'general.architecture'");
    ModelShape shape;
    shape.name = path;
    shape.source = "gguf";
    shape.architecture = *arch;
    const std::string prefix = *arch + ".";
    TERN_RETURN_IF_ERROR(read_gguf_positive(*file, prefix + "block_count", &shape.num_layers));
    TERN_RETURN_IF_ERROR(read_gguf_positive(*file, prefix + "embedding_length", &shape.embedding_dim));
    TERN_RETURN_IF_ERROR(read_gguf_positive(*file, prefix + "feed_forward_length", &shape.ffn_dim));
    TERN_RETURN_IF_ERROR(read_gguf_positive(*file, prefix + "attention.head_count", &shape.num_heads));
    shape.num_kv_heads = read_gguf_kv_heads(*file, prefix + "attention.head_count_kv", shape.num_heads);
    shape.head_dim = file->get_int(prefix + "attention.key_length").value_or(shape.embedding_dim / shape.num_heads);
    const int64_t value_dim = file->get_int(prefix + "attention.value_length").value_or(shape.head_dim);
    if (value_dim != shape.head_dim) {
        return invalid_argument(
            fmt::format("{}: key length {} differs from value length {}; the planner assumes equal "
                        "K and V head lengths",
                        path, shape.head_dim, value_dim));
    }
    shape.context_length = file->get_int(prefix + "context_length").value_or(0);
    const auto* tokens = file->get_array("tokenizer.ggml.tokens", GgufType::kString);
    shape.vocab_size = file->get_int(prefix + "vocab_size").value_or(tokens ? static_cast<int64_t>(tokens->size()) : 0);
    if (shape.vocab_size == 0) {
        if (const GgufTensorInfo* embedding = file->find_tensor("token_embd.weight");
            embedding && embedding->dims.size() == 2) {
            shape.vocab_size = embedding->dims[1];
        }
    }
    shape.qkv_bias = file->find_tensor("blk.0.attn_q.bias") != nullptr;
    for (const char* name : {"rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight"}) {
        shape.rope_factor_tensors += file->find_tensor(name) != nullptr;
    }
    shape.num_experts = file->get_int(prefix + "expert_count").value_or(0);
    shape.num_experts_used = file->get_int(prefix + "expert_used_count").value_or(0);
    // Mixtral (llama with experts) has no expert_feed_forward_length: its experts are feed_forward_length wide.
    shape.expert_ffn_dim = file->get_int(prefix + "expert_feed_forward_length")
                               .value_or(shape.num_experts > 0 ? shape.ffn_dim : 0);
    shape.shared_expert_ffn_dim = file->get_int(prefix + "expert_shared_feed_forward_length").value_or(0);
    shape.sliding_window = std::max<int64_t>(0, file->get_int(prefix + "attention.sliding_window").value_or(0));
    if (shape.sliding_window > 0) {
        shape.num_sliding_layers = count_sliding_layers(
            shape.architecture, shape.num_layers, file->get_int(prefix + "attention.sliding_window_pattern"));
    }
    add_file_bytes(*file, &shape);
    TERN_RETURN_IF_ERROR(validate_shape(shape, path));
    return shape;
}

Result<ModelShape> model_shape_from_config_text(const std::string& text, const std::string& label) {
    // Strict: a key given twice is an error, not silently the last value (which one a reader takes varies).
    TERN_ASSIGN_OR_RETURN(nlohmann::json config, parse_strict_json(text, label));
    if (!config.is_object()) return invalid_argument(label + ": expected a JSON object (a Hugging Face config.json)");
    try {
        // Multimodal configs nest the language model under text_config.
        if (!config.contains("num_hidden_layers") && config.contains("text_config") &&
            config["text_config"].is_object()) {
            return shape_from_config_object(config["text_config"], label);
        }
        return shape_from_config_object(config, label);
    } catch (const nlohmann::json::exception& error) {
        return invalid_argument(fmt::format("{}: unexpected value type ({})", label, error.what()));
    }
}

Result<ModelShape> model_shape_from_config_json(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return not_found(fmt::format("{}: cannot open the file", path));
    std::stringstream buffer;
    buffer << in.rdbuf();
    return model_shape_from_config_text(buffer.str(), path);
}

Result<ModelShape> load_model_shape(const std::string& spec) {
    if (find_preset(spec)) return model_shape_from_preset(spec);
    std::error_code error;
    const std::filesystem::path path(spec);
    if (std::filesystem::is_directory(path, error)) {
        const std::filesystem::path config = path / "config.json";
        if (!std::filesystem::exists(config, error)) {
            return not_found(fmt::format("{}: folder has no config.json", spec));
        }
        return model_shape_from_config_json(config.string());
    }
    if (!std::filesystem::exists(path, error)) {
        return invalid_argument(
            fmt::format("model '{}' is neither a preset ({}) nor an existing GGUF or config.json file", spec,
                        model_preset_names()));
    }
    std::ifstream in(spec, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    if (in.gcount() == 4 && std::string_view(magic, 4) == "GGUF") return model_shape_from_gguf(spec);
    return model_shape_from_config_json(spec);
}

std::string model_preset_names() {
    std::string names;
    for (const ModelPreset& preset : model_presets()) {
        if (preset.name.rfind("tiny", 0) == 0 && preset.name != "tinyllama-1.1b") continue;
        names += (names.empty() ? "" : ", ") + preset.name;
    }
    return names;
}

}  // namespace tern::plan
