#include "convert/hf_config.h"

#include <fmt/format.h>

#include "formats/strict_json.h"
#include "synth/presets.h"

namespace tern {
namespace {

constexpr int64_t kMaxSize = int64_t{1} << 40;  // far above any real model, far below overflow in products

struct ArchitectureInfo {
    std::string_view hf_name;
    std::string_view gguf_name;
    int64_t default_context;  // Hugging Face's default max_position_embeddings for the class
};

constexpr ArchitectureInfo kArchitectures[] = {
    {"LlamaForCausalLM", "llama", 2048},
    {"MistralForCausalLM", "llama", 4096 * 32},
    {"Qwen2ForCausalLM", "qwen2", 32768},
    {"Qwen3ForCausalLM", "qwen3", 40960},
    {"Phi3ForCausalLM", "phi3", 4096},
    {"MixtralForCausalLM", "llama", 4096 * 32},
    {"Gemma2ForCausalLM", "gemma2", 8192},
    {"Gemma3ForCausalLM", "gemma3", 131072},
    {"Gemma3ForConditionalGeneration", "gemma3", 131072},  // its text model; the vision tower is left out
};

// Gemma3TextConfig's defaults, which the text_config of Gemma 3's multimodal checkpoints leaves out (4B lists only
// the sizes, the window and rope_scaling); the sizes themselves are required, as llama.cpp's converter requires them.
const std::pair<std::string_view, nlohmann::json> kGemma3TextDefaults[] = {
    {"num_attention_heads", 8},   {"num_key_value_heads", 4},         {"head_dim", 256},
    {"rms_norm_eps", 1e-6},       {"rope_theta", 1000000.0},          {"rope_local_base_freq", 10000.0},
    {"vocab_size", 262208},       {"max_position_embeddings", 131072}, {"query_pre_attn_scalar", 256},
    {"sliding_window", 4096},
};

// Gemma3ForConditionalGeneration: the top level's keys (token ids, tie_word_embeddings) under text_config's, with
// Gemma3TextConfig's defaults beneath both, as transformers builds the text model's config.
Result<nlohmann::json> gemma3_text_view(const nlohmann::json& json, const std::string& label) {
    const auto text = json.find("text_config");
    if (text == json.end() || !text->is_object()) {
        return invalid_argument(fmt::format("{}: a Gemma3ForConditionalGeneration config needs a 'text_config' "
                                            "object (the language model's sizes)", label));
    }
    nlohmann::json view = json;
    view.erase("text_config");
    view.erase("vision_config");
    for (const auto& [key, value] : text->items()) view[key] = value;
    const bool rope_parameters = view.contains("rope_parameters");  // transformers 5: refused below, not defaulted
    for (const auto& [key, value] : kGemma3TextDefaults) {
        if (rope_parameters && key.starts_with("rope_")) continue;
        if (!view.contains(key) || view[key].is_null()) view[std::string(key)] = value;
    }
    return view;
}

// Typed reads of config.json keys; an absent or null key keeps the caller's default.
class ConfigReader {
public:
    ConfigReader(const nlohmann::json& json, const std::string& label) : json_(json), label_(label) {}

    const nlohmann::json* get(const nlohmann::json& object, std::string_view key) const {
        const auto found = object.find(key);
        return found == object.end() || found->is_null() ? nullptr : &*found;
    }

    Status positive_int(std::string_view key, int64_t* out, bool required = true) const {
        const nlohmann::json* value = get(json_, key);
        if (value == nullptr) {
            if (!required) return Status::ok();
            return invalid_argument(fmt::format("{}: missing '{}'", label_, key));
        }
        const std::optional<uint64_t> size = json_to_uint(*value);
        if (!size || *size == 0 || *size > static_cast<uint64_t>(kMaxSize)) {
            return invalid_argument(fmt::format("{}: '{}' must be a positive integer, found {}", label_, key,
                                                value->dump()));
        }
        *out = static_cast<int64_t>(*size);
        return Status::ok();
    }

    Status number(const nlohmann::json& object, std::string_view key, float* out) const {
        const nlohmann::json* value = get(object, key);
        if (value == nullptr) return Status::ok();
        if (!value->is_number()) {
            return invalid_argument(fmt::format("{}: '{}' must be a number, found {}", label_, key, value->dump()));
        }
        *out = value->get<float>();
        return Status::ok();
    }

    Status boolean(std::string_view key, bool* out) const {
        const nlohmann::json* value = get(json_, key);
        if (value == nullptr) return Status::ok();
        if (!value->is_boolean()) {
            return invalid_argument(
                fmt::format("{}: '{}' must be true or false, found {}", label_, key, value->dump()));
        }
        *out = value->get<bool>();
        return Status::ok();
    }

    // Non-integer values (Llama 3.1 lists several eos ids) are left out, as llama.cpp's converter does.
    std::optional<int64_t> token_id(std::string_view key) const {
        const nlohmann::json* value = get(json_, key);
        const std::optional<uint64_t> id = value != nullptr ? json_to_uint(*value) : std::nullopt;
        return id && *id <= static_cast<uint64_t>(kMaxSize) ? std::optional<int64_t>(static_cast<int64_t>(*id))
                                                            : std::nullopt;
    }

    const std::string& label() const { return label_; }
    const nlohmann::json& json() const { return json_; }

private:
    const nlohmann::json& json_;
    const std::string& label_;
};

Status read_architecture(const ConfigReader& reader, HfConfig* config) {
    const nlohmann::json* architectures = reader.get(reader.json(), "architectures");
    if (architectures == nullptr || !architectures->is_array() || architectures->empty() ||
        !(*architectures)[0].is_string()) {
        return invalid_argument(
            fmt::format("{}: missing 'architectures' (e.g. [\"LlamaForCausalLM\"])", reader.label()));
    }
    config->hf_architecture = (*architectures)[0].get<std::string>();
    for (const ArchitectureInfo& info : kArchitectures) {
        if (info.hf_name != config->hf_architecture) continue;
        config->architecture = info.gguf_name;
        config->context_length = info.default_context;
        return Status::ok();
    }
    return invalid_argument(fmt::format("{}: unknown architecture {}; tern converts the llama (with Mistral and "
                                        "Mixtral), qwen2, qwen3, phi3, gemma2 and gemma3 (Gemma3ForCausalLM, and "
                                        "Gemma3ForConditionalGeneration's text model) families",
                                        reader.label(), config->hf_architecture));
}

Status read_sizes(const ConfigReader& reader, HfConfig* config) {
    TERN_RETURN_IF_ERROR(reader.positive_int("hidden_size", &config->hidden_size));
    TERN_RETURN_IF_ERROR(reader.positive_int("num_hidden_layers", &config->num_layers));
    TERN_RETURN_IF_ERROR(reader.positive_int("num_attention_heads", &config->num_heads));
    config->num_kv_heads = config->num_heads;
    TERN_RETURN_IF_ERROR(reader.positive_int("num_key_value_heads", &config->num_kv_heads, false));
    TERN_RETURN_IF_ERROR(reader.positive_int("intermediate_size", &config->intermediate_size));
    TERN_RETURN_IF_ERROR(reader.positive_int("vocab_size", &config->vocab_size));
    TERN_RETURN_IF_ERROR(reader.positive_int("max_position_embeddings", &config->context_length, false));
    if (config->num_heads % config->num_kv_heads != 0) {
        return invalid_argument(fmt::format("{}: {} attention heads cannot be grouped over {} key/value heads",
                                            reader.label(), config->num_heads, config->num_kv_heads));
    }
    config->head_dim_given = reader.get(reader.json(), "head_dim") != nullptr;
    if (config->head_dim_given) {
        TERN_RETURN_IF_ERROR(reader.positive_int("head_dim", &config->head_dim));
    } else if (config->hidden_size % config->num_heads != 0) {
        return invalid_argument(fmt::format("{}: hidden_size {} is not a multiple of {} attention heads",
                                            reader.label(), config->hidden_size, config->num_heads));
    } else {
        config->head_dim = config->hidden_size / config->num_heads;
    }
    if (config->head_dim % 2 != 0) {
        return invalid_argument(fmt::format("{}: head dimension {} is odd; rotary embeddings need pairs",
                                            reader.label(), config->head_dim));
    }
    TERN_RETURN_IF_ERROR(reader.number(reader.json(), "rms_norm_eps", &config->rms_norm_eps));
    TERN_RETURN_IF_ERROR(reader.number(reader.json(), "rope_theta", &config->rope_theta));
    return reader.boolean("tie_word_embeddings", &config->tie_word_embeddings);
}

// head_dim / 2 positive numbers under `key` of rope_scaling.
Status read_factors(const ConfigReader& reader, const nlohmann::json& scaling, const char* key, int64_t length,
                    std::vector<float>* out) {
    const nlohmann::json* list = reader.get(scaling, key);
    if (list == nullptr || !list->is_array() || static_cast<int64_t>(list->size()) != length) {
        return invalid_argument(fmt::format("{}: rope_scaling.{} must be a list of {} numbers (head_dim / 2)",
                                            reader.label(), key, length));
    }
    for (const nlohmann::json& value : *list) {
        if (!value.is_number() || !(value.get<double>() > 0.0 && value.get<double>() < 1e6)) {
            return invalid_argument(fmt::format("{}: rope_scaling.{} holds {}; each factor must be a positive number",
                                                reader.label(), key, value.dump()));
        }
        out->push_back(value.get<float>());
    }
    return Status::ok();
}

// Phi-3 128k: the factors, the original context (a top-level key, as Phi3Config has it) and the attention factor.
Status read_long_rope(const ConfigReader& reader, const nlohmann::json& scaling, HfConfig* config) {
    config->rope_scaling = RopeScalingKind::kLongRope;
    TERN_RETURN_IF_ERROR(
        read_factors(reader, scaling, "long_factor", config->head_dim / 2, &config->rope_long_factors));
    TERN_RETURN_IF_ERROR(
        read_factors(reader, scaling, "short_factor", config->head_dim / 2, &config->rope_short_factors));
    TERN_RETURN_IF_ERROR(reader.positive_int("original_max_position_embeddings", &config->rope_original_context));
    config->rope_attention_factor = longrope_attention_factor(config->context_length, config->rope_original_context);
    TERN_RETURN_IF_ERROR(reader.number(scaling, "attention_factor", &config->rope_attention_factor));
    if (!(config->rope_attention_factor > 0.0f && config->rope_attention_factor < 100.0f)) {
        return invalid_argument(fmt::format("{}: rope_scaling.attention_factor must be in (0, 100)", reader.label()));
    }
    return Status::ok();
}

Status read_rope_scaling(const ConfigReader& reader, HfConfig* config) {
    const nlohmann::json* scaling = reader.get(reader.json(), "rope_scaling");
    if (scaling == nullptr) return Status::ok();
    if (!scaling->is_object()) {
        return invalid_argument(fmt::format("{}: 'rope_scaling' must be an object or null", reader.label()));
    }
    const nlohmann::json* type = reader.get(*scaling, "rope_type");
    if (type == nullptr) type = reader.get(*scaling, "type");
    const std::string kind = type != nullptr && type->is_string() ? type->get<std::string>() : "";
    if (kind == "default") return Status::ok();
    if (kind == "linear") {
        config->rope_scaling = RopeScalingKind::kLinear;
    } else if (kind == "llama3") {
        config->rope_scaling = RopeScalingKind::kLlama3;
        config->rope_factor = 8.0f;
        TERN_RETURN_IF_ERROR(reader.number(*scaling, "low_freq_factor", &config->rope_low_freq_factor));
        TERN_RETURN_IF_ERROR(reader.number(*scaling, "high_freq_factor", &config->rope_high_freq_factor));
        float original = static_cast<float>(config->rope_original_context);
        TERN_RETURN_IF_ERROR(reader.number(*scaling, "original_max_position_embeddings", &original));
        config->rope_original_context = static_cast<int64_t>(original);
    } else if (kind == "longrope" || kind == "su") {
        return read_long_rope(reader, *scaling, config);
    } else {
        return invalid_argument(fmt::format("{}: rope_scaling type '{}' is not supported (tern converts none, linear, "
                                            "llama3 and longrope)", reader.label(), kind));
    }
    TERN_RETURN_IF_ERROR(reader.number(*scaling, "factor", &config->rope_factor));
    if (!(config->rope_factor > 0) || !(config->rope_high_freq_factor > config->rope_low_freq_factor) ||
        config->rope_original_context <= 0) {
        return invalid_argument(
            fmt::format("{}: rope_scaling {} has invalid factors", reader.label(), scaling->dump()));
    }
    return Status::ok();
}

// Gemma: GGUF has no key for query_pre_attn_scalar, so readers (llama.cpp, tern) take the head length, or
// hidden_size / heads for the 27B layer counts; a checkpoint that says otherwise would be converted wrong.
Status read_gemma(const ConfigReader& reader, HfConfig* config) {
    if (!reader.get(reader.json(), "tie_word_embeddings")) config->tie_word_embeddings = true;  // Gemma's default
    TERN_RETURN_IF_ERROR(reader.number(reader.json(), "attn_logit_softcapping", &config->attn_logit_softcapping));
    TERN_RETURN_IF_ERROR(reader.number(reader.json(), "final_logit_softcapping", &config->final_logit_softcapping));
    TERN_RETURN_IF_ERROR(reader.number(reader.json(), "rope_local_base_freq", &config->rope_local_base_freq));
    const bool is_27b = config->num_layers == (config->architecture == "gemma2" ? 46 : 62);
    const int64_t derived = is_27b ? config->hidden_size / config->num_heads : config->head_dim;
    int64_t scalar = derived;
    TERN_RETURN_IF_ERROR(reader.positive_int("query_pre_attn_scalar", &scalar, false));
    if (scalar != derived) {
        return invalid_argument(fmt::format("{}: query_pre_attn_scalar {} is not what GGUF readers derive ({}): the "
                                            "converted model would attend with the wrong scale", reader.label(), scalar,
                                            derived));
    }
    for (const char* key : {"hidden_activation", "hidden_act"}) {
        const nlohmann::json* activation = reader.get(reader.json(), key);
        if (activation != nullptr && *activation != "gelu_pytorch_tanh") {
            return invalid_argument(fmt::format("{}: {} {} is not supported; Gemma uses gelu_pytorch_tanh",
                                                reader.label(), key, activation->dump()));
        }
        if (activation != nullptr) break;  // hidden_activation overrides hidden_act, as in transformers
    }
    return Status::ok();
}

// Mixtral: how many experts, and how many each token uses (Hugging Face's defaults 8 and 2).
Status read_experts(const ConfigReader& reader, HfConfig* config) {
    config->num_experts = 8;
    config->num_experts_used = 2;
    TERN_RETURN_IF_ERROR(reader.positive_int("num_local_experts", &config->num_experts, false));
    TERN_RETURN_IF_ERROR(reader.positive_int("num_experts_per_tok", &config->num_experts_used, false));
    if (config->num_experts_used > config->num_experts) {
        return invalid_argument(fmt::format("{}: num_experts_per_tok {} exceeds num_local_experts {}", reader.label(),
                                            config->num_experts_used, config->num_experts));
    }
    return Status::ok();
}

Result<HfConfig> config_from_json(const nlohmann::json& top_level, const std::string& label) {
    if (!top_level.is_object()) return invalid_argument(fmt::format("{}: config must be a JSON object", label));
    const auto architectures = top_level.find("architectures");
    const bool multimodal_gemma3 = architectures != top_level.end() && architectures->is_array() &&
                                   !architectures->empty() && (*architectures)[0] == "Gemma3ForConditionalGeneration";
    nlohmann::json text_view;
    if (multimodal_gemma3) {
        TERN_ASSIGN_OR_RETURN(text_view, gemma3_text_view(top_level, label));
    }
    const nlohmann::json& json = multimodal_gemma3 ? text_view : top_level;
    const ConfigReader reader(json, label);
    HfConfig config;
    TERN_RETURN_IF_ERROR(read_architecture(reader, &config));
    config.multimodal = multimodal_gemma3;
    TERN_RETURN_IF_ERROR(read_sizes(reader, &config));
    if (reader.get(json, "rope_parameters") != nullptr && reader.get(json, "rope_theta") == nullptr) {
        // transformers 5 moved the RoPE bases there (per layer type for Gemma 3); converting without them would
        // rotate with a default base and give a model that runs but answers wrongly.
        return invalid_argument(fmt::format("{}: RoPE settings under 'rope_parameters' (transformers 5) are not read "
                                            "yet; add 'rope_theta' (and Gemma 3's 'rope_local_base_freq') from it",
                                            label));
    }
    TERN_RETURN_IF_ERROR(read_rope_scaling(reader, &config));
    TERN_RETURN_IF_ERROR(reader.positive_int("sliding_window", &config.sliding_window, false));
    if (config.is_gemma()) TERN_RETURN_IF_ERROR(read_gemma(reader, &config));
    if (config.hf_architecture == "MixtralForCausalLM") TERN_RETURN_IF_ERROR(read_experts(reader, &config));
    config.bos_token_id = reader.token_id("bos_token_id");
    config.eos_token_id = reader.token_id("eos_token_id");
    config.pad_token_id = reader.token_id("pad_token_id");
    config.unk_token_id = reader.token_id("unk_token_id");
    return config;
}

}  // namespace

Result<HfConfig> parse_hf_config(std::string_view text, const std::string& label) {
    TERN_ASSIGN_OR_RETURN(nlohmann::json json, parse_strict_json(text, label));
    return config_from_json(json, label);
}

Result<HfConfig> read_hf_config(const std::string& path) {
    TERN_ASSIGN_OR_RETURN(nlohmann::json json, read_strict_json_file(path));
    return config_from_json(json, path);
}

}  // namespace tern
