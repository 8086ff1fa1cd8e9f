// tern info: what a GGUF file holds — architecture, hyper-parameters, tensors, sizes, KV bytes per token.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "formats/gguf.h"
#include "kernels/packed_weights.h"
#include "model/hparams.h"

namespace tern::apps {
namespace {

struct InfoOptions {
    std::string model_path;
    bool json = false;
};

std::string metadata_summary(const GgufValue& value) {
    switch (value.type) {
        case GgufType::kString: return value.string_value.size() > 60 ? value.string_value.substr(0, 57) + "..." : value.string_value;
        case GgufType::kArray: return fmt::format("[{} x {}]", value.array.size(), gguf_type_name(value.array_type));
        case GgufType::kBool: return value.int_value ? "true" : "false";
        case GgufType::kF32: case GgufType::kF64: return fmt::format("{}", value.float_value);
        default: return std::to_string(value.int_value);
    }
}

nlohmann::json hparams_json(const HParams& hp) {
    nlohmann::json json = {{"architecture", hp.architecture_name}, {"vocab_size", hp.vocab_size},
            {"context_length", hp.context_length}, {"embedding_dim", hp.embedding_dim},
            {"num_layers", hp.num_layers}, {"ffn_dim", hp.ffn_dim}, {"num_heads", hp.num_heads},
            {"num_kv_heads", hp.num_kv_heads}, {"head_dim", hp.head_dim}, {"rope_dim", hp.rope_dim},
            {"rope_freq_base", hp.rope_freq_base}, {"rms_norm_eps", hp.rms_norm_eps},
            {"rope_style", hp.rope_style == RopeStyle::kHalves ? "neox" : "normal"}};
    if (hp.is_moe()) {
        json["experts"] = {{"count", hp.num_experts}, {"used_per_token", hp.num_experts_used},
                           {"ffn_dim", hp.expert_ffn_dim}, {"shared_ffn_dim", hp.shared_expert_ffn_dim}};
    }
    if (hp.has_sliding_layers()) {
        int64_t sliding = 0;
        for (int64_t layer = 0; layer < hp.num_layers; ++layer) sliding += hp.is_sliding_layer(layer) ? 1 : 0;
        json["sliding_window"] = {{"window", hp.sliding_window}, {"sliding_layers", sliding},
                                  {"global_layers", hp.num_layers - sliding}};
        if (hp.rope_freq_base_sliding > 0.0f) json["sliding_window"]["rope_freq_base"] = hp.rope_freq_base_sliding;
    }
    if (hp.attention_softcap > 0.0f) json["attention_softcap"] = hp.attention_softcap;
    if (hp.logit_softcap > 0.0f) json["logit_softcap"] = hp.logit_softcap;
    if (hp.embedding_scale != 1.0f) json["embedding_scale"] = hp.embedding_scale;
    if (hp.ffn_activation == FfnActivation::kGelu) json["ffn_activation"] = "geglu";
    return json;
}

// RoPE scaling as the loader applies it: linear (positions scaled), llama3 (rope_freqs) or LongRoPE (two factor
// lists, the long ones taken for contexts past the original one).
std::optional<nlohmann::json> rope_scaling_json(const GgufFile& file, const HParams& hp) {
    if (file.find_tensor("rope_freqs.weight") != nullptr) return nlohmann::json{{"type", "llama3 (rope_freqs)"}};
    if (file.find_tensor("rope_factors_long.weight") != nullptr) {
        return nlohmann::json{{"type", "longrope"}, {"original_context", hp.rope_original_context},
                              {"attention_factor", hp.rope_attention_factor},
                              {"long_factors", "when the context (--max-model-len, -c) exceeds original_context"}};
    }
    if (hp.rope_position_scale != 1.0f) {
        return nlohmann::json{{"type", "linear"}, {"factor", 1.0 / hp.rope_position_scale}};
    }
    return std::nullopt;
}

nlohmann::json build_report(const GgufFile& file, const Result<HParams>& hparams) {
    nlohmann::json report;
    report["file"] = file.path();
    report["gguf_version"] = file.version();
    report["file_bytes"] = file.file_size();
    int64_t num_params = 0;
    int64_t weight_bytes = 0;
    std::map<std::string, int64_t> tensors_by_type;
    nlohmann::json tensors = nlohmann::json::array();
    const bool output_tied = file.find_tensor("output.weight") == nullptr;
    for (const GgufTensorInfo& info : file.tensors()) {
        num_params += info.num_elements;
        weight_bytes += info.num_bytes;
        ++tensors_by_type[std::string(dtype_name(info.type))];
        nlohmann::json tensor = {{"name", info.name}, {"type", dtype_name(info.type)}, {"shape", info.dims},
                                 {"bytes", info.num_bytes}};
        // Every 2-D weight is a matmul operand except the embedding, which is one only when tied to the output.
        const bool is_matmul = info.dims.size() == 2 && (info.name != "token_embd.weight" || output_tied);
        const kernels::WeightLayout layout = kernels::packed_layout_for(info.type);
        if (hparams.is_ok() && is_matmul && layout != kernels::WeightLayout::kRowMajor) {
            tensor["repacked_at_load"] = kernels::weight_layout_name(layout);
        }
        tensors.push_back(tensor);
    }
    report["num_params"] = num_params;
    report["weight_bytes"] = weight_bytes;
    report["tensor_types"] = tensors_by_type;
    report["tensors"] = tensors;
    if (hparams.is_ok()) {
        const HParams& hp = hparams.value();
        report["hparams"] = hparams_json(hp);
        if (const std::optional<nlohmann::json> scaling = rope_scaling_json(file, hp)) {
            report["hparams"]["rope_scaling"] = *scaling;
        }
        report["kv_bytes_per_token_f16"] = hp.kv_bytes_per_token(2);
        report["kv_bytes_per_token_f32"] = hp.kv_bytes_per_token(4);
    } else {
        report["hparams_error"] = hparams.status().message();
    }
    nlohmann::json metadata = nlohmann::json::object();
    for (const auto& [key, value] : file.metadata()) metadata[key] = metadata_summary(value);
    report["metadata"] = metadata;
    return report;
}

void print_text(const nlohmann::json& report) {
    std::cout << fmt::format("file: {} (GGUF v{}, {} bytes)\n", report["file"].get<std::string>(),
                             report["gguf_version"].get<int>(), report["file_bytes"].get<int64_t>());
    if (report.contains("hparams")) {
        std::cout << "hyper-parameters:\n";
        for (const auto& [key, value] : report["hparams"].items()) std::cout << fmt::format("  {:<16} {}\n", key, value.dump());
    } else {
        std::cout << "hyper-parameters: not a supported model (" << report["hparams_error"].get<std::string>() << ")\n";
    }
    const double num_params = report["num_params"].get<double>();
    const std::string scaled = num_params >= 1e9 ? fmt::format("{:.2f}B", num_params / 1e9)
                                                 : fmt::format("{:.2f}M", num_params / 1e6);
    std::cout << fmt::format("parameters: {} ({})\n", report["num_params"].get<int64_t>(), scaled);
    std::cout << fmt::format("weight bytes: {} ({:.1f} MiB)\n", report["weight_bytes"].get<int64_t>(),
                             report["weight_bytes"].get<double>() / (1 << 20));
    if (report.contains("kv_bytes_per_token_f16")) {
        std::cout << fmt::format("KV cache bytes per token: {} at f16, {} at f32\n",
                                 report["kv_bytes_per_token_f16"].get<int64_t>(),
                                 report["kv_bytes_per_token_f32"].get<int64_t>());
    }
    std::cout << "tensor types:";
    for (const auto& [type, count] : report["tensor_types"].items()) std::cout << " " << type << "=" << count.get<int>();
    std::cout << fmt::format("\n{:<32} {:<6} {:<20} {:>12}  {}\n", "tensor", "type", "shape", "bytes",
                             "repacked at load (int8 kernels)");
    for (const nlohmann::json& tensor : report["tensors"]) {
        std::cout << fmt::format("{:<32} {:<6} {:<20} {:>12}  {}\n", tensor["name"].get<std::string>(),
                                 tensor["type"].get<std::string>(), tensor["shape"].dump(), tensor["bytes"].get<int64_t>(),
                                 tensor.value("repacked_at_load", ""));
    }
    std::cout << "metadata:\n";
    for (const auto& [key, value] : report["metadata"].items()) {
        std::cout << fmt::format("  {:<40} {}\n", key, value.get<std::string>());
    }
}

Status run_info(const InfoOptions& options) {
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(options.model_path));
    const nlohmann::json report = build_report(*file, hparams_from_gguf(*file));
    if (options.json) {
        std::cout << report.dump(1) << "\n";
    } else {
        print_text(report);
    }
    return Status::ok();
}

}  // namespace

void register_info(CLI::App& app) {
    auto options = std::make_shared<InfoOptions>();
    CLI::App* command = app.add_subcommand("info", "Show a GGUF model's architecture, tensors and sizes");
    add_model_option(command, &options->model_path, "GGUF file")->required();
    command->add_flag("--json", options->json, "Print one JSON object");
    set_action(command, [options] { return run_info(*options); });
}

}  // namespace tern::apps
