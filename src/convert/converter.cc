#include "convert/converter.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "base/fp16.h"
#include "base/log.h"
#include "convert/hf_config.h"
#include "convert/hf_vocab.h"
#include "convert/tensor_plan.h"
#include "formats/gguf_writer.h"
#include "formats/safetensors.h"
#include "synth/presets.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

struct BoundTensor {
    TensorPlan plan;
    std::vector<const SafetensorsTensor*> sources;  // one, or each expert's in order (stacked)
};

std::string format_shape(const std::vector<int64_t>& shape) {
    std::string text;
    for (int64_t dim : shape) text += (text.empty() ? "" : ", ") + std::to_string(dim);
    return "[" + text + "]";
}

float load_element(const SafetensorsTensor& tensor, int64_t index) {
    if (tensor.type == DType::kF32) {
        float value;
        std::memcpy(&value, tensor.data + index * 4, 4);  // the data section need not be 4-byte aligned
        return value;
    }
    uint16_t half;
    std::memcpy(&half, tensor.data + index * 2, 2);
    return tensor.type == DType::kF16 ? fp16_to_fp32(half) : bf16_to_fp32(half);
}

void store_element(DType type, float value, uint8_t* dst, int64_t index) {
    if (type == DType::kF32) {
        std::memcpy(dst + index * 4, &value, 4);
        return;
    }
    const uint16_t half = type == DType::kF16 ? fp32_to_fp16(value) : fp32_to_bf16(value);
    std::memcpy(dst + index * 2, &half, 2);
}

// Converts one tensor (or each expert's, one after another) into `dst`, moving rows into llama's RoPE order where
// the plan asks.
void convert_tensor(const BoundTensor& bound, DType dst_type, uint8_t* dst) {
    const int64_t row_length = bound.plan.hf_shape.back();
    int64_t first_element = 0;
    for (const SafetensorsTensor* source : bound.sources) {
        const int64_t num_rows = source->num_elements / row_length;
        for (int64_t row = 0; row < num_rows; ++row) {
            const int64_t source_row =
                bound.plan.rope_heads > 0 ? rope_source_row(row, num_rows, bound.plan.rope_heads) : row;
            for (int64_t col = 0; col < row_length; ++col) {
                const float value = load_element(*source, source_row * row_length + col) + bound.plan.add;
                store_element(dst_type, value, dst, first_element + row * row_length + col);
            }
        }
        first_element += source->num_elements;
    }
}

// The checkpoint's tensors under the names the plan uses. A multimodal checkpoint's language model sits under
// "language_model." ("language_model.model.layers.0..." before transformers 4.52, "model.language_model.layers.0..."
// since): the prefix is dropped; its vision tower and projector are left out, as llama.cpp's converter leaves them
// for a separate mmproj file.
struct TensorIndex {
    std::map<std::string, const SafetensorsCheckpoint::Entry*, std::less<>> by_name;
    int64_t num_vision = 0;
};

TensorIndex index_tensors(const HfConfig& config, const SafetensorsCheckpoint& checkpoint) {
    TensorIndex index;
    for (const auto& [name, entry] : checkpoint.entries()) {
        std::string text_name = name;
        if (config.multimodal) {
            const bool vision = name.find("vision_tower.") != std::string::npos ||
                                name.find("multi_modal_projector.") != std::string::npos;
            if (vision) {
                ++index.num_vision;
                continue;
            }
            const std::string_view prefix = "language_model.";
            if (const size_t at = text_name.find(prefix); at != std::string::npos) text_name.erase(at, prefix.size());
        }
        index.by_name.emplace(std::move(text_name), &entry);
    }
    return index;
}

Result<std::vector<BoundTensor>> bind_tensors(const HfConfig& config, const SafetensorsCheckpoint& checkpoint) {
    const TensorIndex index = index_tensors(config, checkpoint);
    if (index.num_vision > 0) {
        log_info("{}: left out {} vision tensors (tern serves the text model)", checkpoint.source(), index.num_vision);
    }
    std::vector<BoundTensor> bound;
    std::set<std::string, std::less<>> used;
    for (TensorPlan& plan : plan_tensors(config)) {
        if (plan.optional && !index.by_name.contains(plan.hf_name)) {
            if (!config.tie_word_embeddings) {
                log_warn("{}: no {}; the output shares token_embd", checkpoint.source(), plan.hf_name);
            }
            continue;
        }
        BoundTensor tensor{plan, {}};
        for (int64_t part = 0; part < plan.num_parts(); ++part) {
            const std::string name = plan.part_name(part);
            const auto found = index.by_name.find(name);
            if (found == index.by_name.end()) {
                return invalid_argument(fmt::format("{}: missing tensor '{}', which a {} model with these config.json "
                                                    "sizes needs", checkpoint.source(), name, config.hf_architecture));
            }
            const SafetensorsCheckpoint::Entry* entry = found->second;
            if (entry->tensor->shape != plan.hf_shape) {
                return invalid_argument(fmt::format("{}: tensor '{}' has shape {}, but config.json implies {}",
                                                    entry->file->path(), name, format_shape(entry->tensor->shape),
                                                    format_shape(plan.hf_shape)));
            }
            used.insert(name);
            tensor.sources.push_back(entry->tensor);
        }
        bound.push_back(std::move(tensor));
    }
    for (const auto& [name, entry] : index.by_name) {
        if (used.count(name) != 0 || is_skipped_hf_tensor(name)) continue;
        return invalid_argument(fmt::format("{}: tensor '{}' has no place in a {} model; tern cannot convert it",
                                            entry->file->path(), name, config.architecture));
    }
    return bound;
}

// The sliding window where the family attends through one (Qwen2 configs carry a sliding_window they switch off
// with use_sliding_window: false, so qwen families are left out), Gemma 2's soft caps and Gemma 3's local RoPE base.
void write_window_and_caps(const HfConfig& config, GgufWriter* writer) {
    const std::string& arch = config.architecture;
    const bool windowed = config.is_gemma() || arch == "phi3" || arch == "llama";
    if (windowed && config.sliding_window > 0) {
        writer->add_u32(arch + ".attention.sliding_window", static_cast<uint32_t>(config.sliding_window));
    }
    if (config.attn_logit_softcapping > 0) {
        writer->add_f32(arch + ".attn_logit_softcapping", config.attn_logit_softcapping);
    }
    if (config.final_logit_softcapping > 0) {
        writer->add_f32(arch + ".final_logit_softcapping", config.final_logit_softcapping);
    }
    if (config.rope_local_base_freq > 0) writer->add_f32(arch + ".rope.freq_base_swa", config.rope_local_base_freq);
}

void write_hparams(const HfConfig& config, const std::string& name, DType weight_type, GgufWriter* writer) {
    const std::string& arch = config.architecture;
    writer->add_string("general.architecture", arch);
    writer->add_string("general.name", name);
    writer->add_u32("general.file_type", llama_file_type(weight_type));
    writer->add_u32("general.quantization_version", 2);
    writer->add_u32(arch + ".context_length", static_cast<uint32_t>(config.context_length));
    writer->add_u32(arch + ".embedding_length", static_cast<uint32_t>(config.hidden_size));
    writer->add_u32(arch + ".block_count", static_cast<uint32_t>(config.num_layers));
    writer->add_u32(arch + ".feed_forward_length", static_cast<uint32_t>(config.intermediate_size));
    writer->add_u32(arch + ".attention.head_count", static_cast<uint32_t>(config.num_heads));
    writer->add_u32(arch + ".attention.head_count_kv", static_cast<uint32_t>(config.num_kv_heads));
    if (config.head_dim_given) {
        writer->add_u32(arch + ".attention.key_length", static_cast<uint32_t>(config.head_dim));
        writer->add_u32(arch + ".attention.value_length", static_cast<uint32_t>(config.head_dim));
    }
    writer->add_u32(arch + ".rope.dimension_count", static_cast<uint32_t>(config.head_dim));
    writer->add_f32(arch + ".rope.freq_base", config.rope_theta);
    writer->add_f32(arch + ".attention.layer_norm_rms_epsilon", config.rms_norm_eps);
    writer->add_u32(arch + ".vocab_size", static_cast<uint32_t>(config.vocab_size));
    if (config.rope_scaling == RopeScalingKind::kLinear) {
        writer->add_string(arch + ".rope.scaling.type", "linear");
        writer->add_f32(arch + ".rope.scaling.factor", config.rope_factor);
    }
    if (config.rope_scaling == RopeScalingKind::kLongRope) {  // as llama.cpp's converter: no scaling type
        writer->add_u32(arch + ".rope.scaling.original_context_length",
                        static_cast<uint32_t>(config.rope_original_context));
        writer->add_f32(arch + ".rope.scaling.attn_factor", config.rope_attention_factor);
    }
    write_window_and_caps(config, writer);
    if (config.num_experts > 0) {  // Mixtral: llama with experts as wide as feed_forward_length
        writer->add_u32(arch + ".expert_count", static_cast<uint32_t>(config.num_experts));
        writer->add_u32(arch + ".expert_used_count", static_cast<uint32_t>(config.num_experts_used));
    }
}


// Llama 3.1's rope_freqs, computed from its scaling parameters, or LongRoPE's two lists as config.json gives them.
std::vector<std::pair<std::string, std::vector<float>>> rope_factor_tensors(const HfConfig& config) {
    if (config.rope_scaling == RopeScalingKind::kLlama3) {
        return {{"rope_freqs.weight", llama3_rope_factors(config.head_dim, config.rope_theta, config.rope_factor,
                                                          config.rope_low_freq_factor, config.rope_high_freq_factor,
                                                          config.rope_original_context)}};
    }
    if (config.rope_scaling == RopeScalingKind::kLongRope) {
        return {{"rope_factors_long.weight", config.rope_long_factors},
                {"rope_factors_short.weight", config.rope_short_factors}};
    }
    return {};
}

void add_tensors(const HfConfig& config, const std::vector<BoundTensor>& bound, DType weight_type, GgufWriter* writer) {
    for (const BoundTensor& tensor : bound) {
        const DType type = tensor.plan.keep_f32 ? DType::kF32 : weight_type;
        std::vector<int64_t> dims(tensor.plan.hf_shape.rbegin(), tensor.plan.hf_shape.rend());  // ggml: row first
        if (tensor.plan.num_experts > 0) dims.push_back(tensor.plan.num_experts);
        writer->add_tensor(tensor.plan.gguf_name, type, std::move(dims),
                           [&tensor, type](uint8_t* dst) { convert_tensor(tensor, type, dst); });
    }
    // Frequency divisors, one per rotation pair, as llama.cpp's converter stores them.
    for (auto& [name, factors] : rope_factor_tensors(config)) {
        const int64_t length = static_cast<int64_t>(factors.size());
        writer->add_tensor(name, DType::kF32, {length}, [factors = std::move(factors)](uint8_t* dst) {
            std::memcpy(dst, factors.data(), factors.size() * sizeof(float));
        });
    }
}

}  // namespace

Result<ConvertSummary> convert_hf_to_gguf(const std::string& hf_dir, const std::string& out_path,
                                          const ConvertOptions& options) {
    if (options.weight_type != DType::kF32 && options.weight_type != DType::kF16 &&
        options.weight_type != DType::kBF16) {
        return invalid_argument(fmt::format("tern convert writes f32, f16 or bf16 weights, not {}",
                                            dtype_name(options.weight_type)));
    }
    const fs::path dir(hf_dir);
    std::error_code error;
    if (!fs::is_regular_file(dir / "config.json", error)) {
        return Status(StatusCode::kNotFound,
                      fmt::format("{}: no config.json; expected a Hugging Face model folder", hf_dir));
    }
    TERN_ASSIGN_OR_RETURN(HfConfig config, read_hf_config((dir / "config.json").string()));
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsCheckpoint> checkpoint, SafetensorsCheckpoint::open_dir(hf_dir));
    TERN_ASSIGN_OR_RETURN(std::vector<BoundTensor> bound, bind_tensors(config, *checkpoint));
    TERN_ASSIGN_OR_RETURN(GgufVocab vocab, read_hf_vocab(hf_dir, config));

    GgufWriter writer;
    fs::path folder = fs::absolute(dir, error).lexically_normal();
    if (!folder.has_filename()) folder = folder.parent_path();
    const std::string name = folder.filename().string();
    write_hparams(config, name.empty() ? "model" : name, options.weight_type, &writer);
    write_vocab_metadata(vocab, &writer);
    add_tensors(config, bound, options.weight_type, &writer);
    TERN_RETURN_IF_ERROR(writer.write(out_path));  // beside out_path, renamed into place when whole

    ConvertSummary summary;
    summary.architecture = config.architecture;
    summary.tokenizer_model = vocab.model;
    for (const BoundTensor& tensor : bound) {
        for (const SafetensorsTensor* source : tensor.sources) summary.num_parameters += source->num_elements;
    }
    summary.num_tensors = static_cast<int64_t>(bound.size() + rope_factor_tensors(config).size());
    return summary;
}

}  // namespace tern
