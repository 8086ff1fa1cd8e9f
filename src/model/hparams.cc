#include "model/hparams.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/printable.h"

namespace tern {
namespace {

Status missing_key(const GgufFile& file, const std::string& key) {
    return invalid_argument(fmt::format("{}: missing metadata key '{}' (an integer); is this a complete model file?",
                                        file.path(), key));
}

Status read_positive(const GgufFile& file, const std::string& key, int64_t* out) {
    const std::optional<int64_t> value = file.get_int(key);
    if (!value) return missing_key(file, key);
    if (*value <= 0 || *value > (int64_t{1} << 40)) {
        return invalid_argument(fmt::format("{}: metadata '{}' is {}; it must be positive", file.path(), key, *value));
    }
    *out = *value;
    return Status::ok();
}

Status read_rope_scaling(const GgufFile& file, const std::string& prefix, HParams* hparams) {
    const std::optional<std::string> type = file.get_string(prefix + "rope.scaling.type");
    if (!type || *type == "none") return Status::ok();
    if (*type == "linear") {
        const double factor = file.get_float(prefix + "rope.scaling.factor").value_or(1.0);
        if (factor <= 0) return invalid_argument(fmt::format("{}: rope.scaling.factor must be positive", file.path()));
        hparams->rope_position_scale = static_cast<float>(1.0 / factor);
        return Status::ok();
    }
    // llama3 scaling arrives as the rope_freqs.weight tensor, which the weights loader applies; so do LongRoPE's
    // factors, which llama.cpp's files carry without a scaling type.
    if (*type == "llama3") return Status::ok();
    return invalid_argument(fmt::format("{}: rope scaling type '{}' is not supported (supported: none, linear, llama3)",
                                        file.path(), printable(*type)));
}

// LongRoPE's metadata (Phi-3 128k, as llama.cpp's converter writes it): the original context (llama.cpp's default:
// the trained one) and the attention factor, which llama.cpp multiplies into cos and sin whichever factors it uses.
Status read_long_rope(const GgufFile& file, const std::string& prefix, HParams* hparams) {
    hparams->rope_original_context =
        file.get_int(prefix + "rope.scaling.original_context_length").value_or(hparams->context_length);
    if (hparams->rope_original_context <= 0) {
        return invalid_argument(fmt::format("{}: {}rope.scaling.original_context_length must be positive",
                                            file.path(), prefix));
    }
    const double factor = file.get_float(prefix + "rope.scaling.attn_factor").value_or(1.0);
    if (!(factor > 0.0 && factor < 100.0)) {
        return invalid_argument(fmt::format("{}: {}rope.scaling.attn_factor is {}; it must be in (0, 100)",
                                            file.path(), prefix, factor));
    }
    hparams->rope_attention_factor = static_cast<float>(factor);
    return Status::ok();
}

// The experts' count, how many each token uses, and their width; each must be there and make sense together.
Status read_experts(const GgufFile& file, const std::string& prefix, HParams* hparams) {
    TERN_RETURN_IF_ERROR(read_positive(file, prefix + "expert_count", &hparams->num_experts));
    TERN_RETURN_IF_ERROR(read_positive(file, prefix + "expert_used_count", &hparams->num_experts_used));
    // Mixtral's experts (llama architecture) are feed_forward_length wide; the Qwen MoEs say so separately.
    hparams->expert_ffn_dim = hparams->ffn_dim;
    if (hparams->architecture != Architecture::kLlama || file.get_int(prefix + "expert_feed_forward_length")) {
        TERN_RETURN_IF_ERROR(read_positive(file, prefix + "expert_feed_forward_length", &hparams->expert_ffn_dim));
    }
    if (hparams->architecture == Architecture::kQwen2Moe) {  // llama.cpp's default: the routed experts' width
        hparams->shared_expert_ffn_dim =
            file.get_int(prefix + "expert_shared_feed_forward_length").value_or(hparams->expert_ffn_dim);
        if (hparams->shared_expert_ffn_dim <= 0) {
            return invalid_argument(fmt::format("{}: {}expert_shared_feed_forward_length must be positive",
                                                file.path(), prefix));
        }
    }
    if (hparams->num_experts_used > hparams->num_experts || hparams->num_experts > 4096) {
        return invalid_argument(fmt::format("{}: {} uses {} of {} experts per token; it must use at most as many as "
                                            "there are (and there may be at most 4096)", file.path(),
                                            prefix + "expert_used_count", hparams->num_experts_used,
                                            hparams->num_experts));
    }
    return Status::ok();
}

// A model trained with sliding-window attention sees no further back than its window in the layers that slide: all
// of them (Mistral 7B v0.1, Phi-3-mini: 2,047 tokens; llama.cpp ignores the window for those two architectures and
// attends to everything), or all but every pattern-th (Gemma 2: 2, Gemma 3: 6; llama.cpp's set_swa_pattern). An
// integer "attention.sliding_window_pattern" in the file overrides the family's pattern.
Status read_sliding_window(const GgufFile& file, const std::string& prefix, HParams* hparams) {
    const std::optional<int64_t> window = file.get_int(prefix + "attention.sliding_window");
    if (!window || *window <= 0) return Status::ok();
    if (*window > (int64_t{1} << 30)) {
        return invalid_argument(fmt::format("{}: {}attention.sliding_window is {}; it must be at most 2^30",
                                            file.path(), prefix, *window));
    }
    hparams->sliding_window = *window;
    hparams->sliding_window_pattern = kv::default_sliding_pattern(hparams->architecture_name);
    const std::optional<int64_t> pattern = file.get_int(prefix + "attention.sliding_window_pattern");
    if (pattern) {
        if (*pattern < 0 || *pattern > hparams->num_layers) {
            return invalid_argument(fmt::format("{}: {}attention.sliding_window_pattern is {}; it must be in [0, {}]",
                                                file.path(), prefix, *pattern, hparams->num_layers));
        }
        hparams->sliding_window_pattern = *pattern;
    }
    return Status::ok();
}

// Gemma's differences from llama that the metadata carries or that follow from the family. The attention scale is
// 1 / sqrt(query_pre_attn_scalar), which the GGUF does not hold: as llama.cpp, it is the head length except in the
// 27B models (46 layers for Gemma 2, 62 for Gemma 3), whose scalar is embedding_length / head_count.
void read_gemma(const GgufFile& file, const std::string& prefix, HParams* hparams) {
    hparams->embedding_scale = std::sqrt(static_cast<float>(hparams->embedding_dim));
    hparams->ffn_activation = FfnActivation::kGelu;
    const bool is_27b = hparams->num_layers == (hparams->architecture == Architecture::kGemma2 ? 46 : 62);
    const int64_t scalar = is_27b ? hparams->embedding_dim / hparams->num_heads : hparams->head_dim;
    hparams->attention_scale = 1.0f / std::sqrt(static_cast<float>(scalar));
    if (hparams->architecture == Architecture::kGemma2) {  // llama.cpp's defaults where the keys are missing
        hparams->attention_softcap =
            static_cast<float>(file.get_float(prefix + "attn_logit_softcapping").value_or(50.0));
        hparams->logit_softcap = static_cast<float>(file.get_float(prefix + "final_logit_softcapping").value_or(30.0));
    } else if (hparams->sliding_window > 0) {
        hparams->rope_freq_base_sliding =
            static_cast<float>(file.get_float(prefix + "rope.freq_base_swa").value_or(10000.0));
    }
}

// The GGUF architecture names tern computes, and how each rotates its heads.
struct ArchitectureName {
    std::string name;
    Architecture architecture;
    RopeStyle rope_style;
};
const ArchitectureName kArchitectures[] = {
    {"llama", Architecture::kLlama, RopeStyle::kAdjacentPairs},
    {"qwen2", Architecture::kQwen2, RopeStyle::kHalves},
    {"qwen3", Architecture::kQwen3, RopeStyle::kHalves},
    {"qwen3moe", Architecture::kQwen3Moe, RopeStyle::kHalves},
    {"qwen2moe", Architecture::kQwen2Moe, RopeStyle::kHalves},
    {"phi3", Architecture::kPhi3, RopeStyle::kHalves},
    {"gemma2", Architecture::kGemma2, RopeStyle::kHalves},
    {"gemma3", Architecture::kGemma3, RopeStyle::kHalves},
};

}  // namespace

Result<HParams> hparams_from_gguf(const GgufFile& file) {
    HParams hparams;
    const std::optional<std::string> arch = file.get_string("general.architecture");
    if (!arch) return invalid_argument(file.path() + ": missing metadata key 'general.architecture'");
    hparams.architecture_name = *arch;
    const auto known = std::find_if(std::begin(kArchitectures), std::end(kArchitectures),
                                    [&](const ArchitectureName& entry) { return *arch == entry.name; });
    if (known == std::end(kArchitectures)) {
        std::string supported;
        for (const ArchitectureName& entry : kArchitectures) supported += (supported.empty() ? "" : ", ") + entry.name;
        return invalid_argument(fmt::format("{}: architecture '{}' is not supported (supported: {})", file.path(),
                                            printable(*arch), supported));
    }
    hparams.architecture = known->architecture;
    hparams.rope_style = known->rope_style;
    hparams.renormalize_experts = hparams.architecture != Architecture::kQwen2Moe;  // llama.cpp's norm_w
    const std::string prefix = *arch + ".";
    TERN_RETURN_IF_ERROR(read_positive(file, prefix + "context_length", &hparams.context_length));
    TERN_RETURN_IF_ERROR(read_positive(file, prefix + "embedding_length", &hparams.embedding_dim));
    TERN_RETURN_IF_ERROR(read_positive(file, prefix + "block_count", &hparams.num_layers));
    TERN_RETURN_IF_ERROR(read_positive(file, prefix + "feed_forward_length", &hparams.ffn_dim));
    TERN_RETURN_IF_ERROR(read_positive(file, prefix + "attention.head_count", &hparams.num_heads));
    hparams.num_kv_heads = file.get_int(prefix + "attention.head_count_kv").value_or(hparams.num_heads);
    if (hparams.num_kv_heads <= 0 || hparams.num_heads % hparams.num_kv_heads != 0) {
        return invalid_argument(fmt::format("{}: {} attention heads cannot be grouped over {} KV heads", file.path(),
                                            hparams.num_heads, hparams.num_kv_heads));
    }
    if (hparams.embedding_dim % hparams.num_heads != 0) {
        return invalid_argument(fmt::format("{}: embedding length {} is not a multiple of {} heads", file.path(),
                                            hparams.embedding_dim, hparams.num_heads));
    }
    hparams.head_dim = file.get_int(prefix + "attention.key_length").value_or(hparams.embedding_dim / hparams.num_heads);
    hparams.rope_dim = file.get_int(prefix + "rope.dimension_count").value_or(hparams.head_dim);
    if (hparams.head_dim <= 0 || hparams.rope_dim <= 0 || hparams.rope_dim > hparams.head_dim ||
        hparams.rope_dim % 2 != 0) {
        return invalid_argument(fmt::format("{}: head length {} and rope dimension {} are inconsistent", file.path(),
                                            hparams.head_dim, hparams.rope_dim));
    }
    hparams.rms_norm_eps = static_cast<float>(file.get_float(prefix + "attention.layer_norm_rms_epsilon").value_or(1e-5));
    hparams.rope_freq_base = static_cast<float>(file.get_float(prefix + "rope.freq_base").value_or(10000.0));
    TERN_RETURN_IF_ERROR(read_rope_scaling(file, prefix, &hparams));
    TERN_RETURN_IF_ERROR(read_long_rope(file, prefix, &hparams));
    // Mixtral: llama with experts (a dense llama file may say expert_count 0).
    const bool mixtral =
        hparams.architecture == Architecture::kLlama && file.get_int(prefix + "expert_count").value_or(0) > 0;
    if (hparams.architecture == Architecture::kQwen3Moe || hparams.architecture == Architecture::kQwen2Moe ||
        mixtral) {
        TERN_RETURN_IF_ERROR(read_experts(file, prefix, &hparams));
    }
    TERN_RETURN_IF_ERROR(read_sliding_window(file, prefix, &hparams));
    if (hparams.has_post_norms()) read_gemma(file, prefix, &hparams);
    const auto* tokens = file.get_array("tokenizer.ggml.tokens", GgufType::kString);
    hparams.vocab_size = file.get_int(prefix + "vocab_size").value_or(tokens ? static_cast<int64_t>(tokens->size()) : 0);
    return hparams;
}

}  // namespace tern
