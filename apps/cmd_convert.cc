// tern convert: a Hugging Face model folder -> GGUF (llama, qwen2 and qwen3 families; f32, f16 or bf16 weights).
#include <fmt/format.h>

#include <iostream>

#include "apps/commands.h"
#include "convert/converter.h"

namespace tern::apps {
namespace {

struct ConvertCommandOptions {
    std::string hf_dir;
    std::string output_path;
    std::string type = "f32";
};

Status run_convert(const ConvertCommandOptions& options) {
    const std::optional<DType> type = dtype_from_name(options.type);
    if (!type || (*type != DType::kF32 && *type != DType::kF16 && *type != DType::kBF16)) {
        return invalid_argument(fmt::format("unknown weight type '{}'; tern convert writes f32, f16 or bf16 (quantize "
                                            "afterwards for smaller types)", options.type));
    }
    TERN_ASSIGN_OR_RETURN(ConvertSummary summary,
                          convert_hf_to_gguf(options.hf_dir, options.output_path, ConvertOptions{*type}));
    std::cerr << fmt::format("wrote {} ({}, {} tensors, {} parameters, {} weights, {} tokenizer)\n",
                             options.output_path, summary.architecture, summary.num_tensors, summary.num_parameters,
                             dtype_name(*type), summary.tokenizer_model == "llama" ? "SentencePiece" : "BPE");
    return Status::ok();
}

}  // namespace

void register_convert(CLI::App& app) {
    auto options = std::make_shared<ConvertCommandOptions>();
    CLI::App* command = app.add_subcommand("convert", "Convert a Hugging Face model folder (safetensors) to GGUF");
    command->add_option("HF_DIR", options->hf_dir, "Folder with config.json, *.safetensors and the tokenizer")
        ->required();
    command->add_option("OUT", options->output_path, "Output GGUF path")->required();
    command->add_option("--type", options->type, "Weight type: f32, f16, bf16")->capture_default_str();
    set_action(command, [options] { return run_convert(*options); });
}

}  // namespace tern::apps
