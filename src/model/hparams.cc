#include "model/hparams.h"

#include <algorithm>

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
    // llama3 scaling arrives as the rope_freqs.weight tensor, which the weights loader applies.
    if (*type == "llama3") return Status::ok();
    return invalid_argument(fmt::format("{}: rope scaling type '{}' is not supported (supported: none, linear, llama3)",
                                        file.path(), printable(*type)));
}

// The experts' count, how many each token uses, and their width; each must be there and make sense together.
Status read_experts(const GgufFile& file, const std::string& prefix, HParams* hparams) {
    TERN_RETURN_IF_ERROR(read_positive(file, prefix + "expert_count", &hparams->num_experts));
    TERN_RETURN_IF_ERROR(read_positive(file, prefix + "expert_used_count", &hparams->num_experts_used));
    TERN_RETURN_IF_ERROR(read_positive(file, prefix + "expert_feed_forward_length", &hparams->expert_ffn_dim));
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

// A model trained with sliding-window attention (Phi-3-mini: 2,047 tokens) sees no further back than its window.
// Until the KV cache keeps windows (issue #22), its context stops at the window, where full attention and the
// window still agree, rather than silently attend further than the model was trained to.
Status limit_to_sliding_window(const GgufFile& file, const std::string& prefix, HParams* hparams) {
    const std::optional<int64_t> window = file.get_int(prefix + "attention.sliding_window");
    if (!window || *window <= 0) return Status::ok();
    hparams->context_length = std::min(hparams->context_length, *window + 1);
    return Status::ok();
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
    if (hparams.architecture == Architecture::kQwen3Moe || hparams.architecture == Architecture::kQwen2Moe) {
        TERN_RETURN_IF_ERROR(read_experts(file, prefix, &hparams));
    }
    TERN_RETURN_IF_ERROR(limit_to_sliding_window(file, prefix, &hparams));
    const auto* tokens = file.get_array("tokenizer.ggml.tokens", GgufType::kString);
    hparams.vocab_size = file.get_int(prefix + "vocab_size").value_or(tokens ? static_cast<int64_t>(tokens->size()) : 0);
    return hparams;
}

}  // namespace tern
