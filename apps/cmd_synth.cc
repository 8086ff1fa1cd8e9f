// tern synth: a GGUF with random weights in a real model's shape (the embedded default models).
#include <fmt/format.h>

#include <iostream>

#include "apps/commands.h"
#include "synth/synth.h"

namespace tern::apps {
namespace {

struct SynthCommandOptions {
    std::string preset = "tiny";
    std::string type = "f32";
    std::string output_path;
    uint64_t seed = 42;
    int num_threads = 2;
    int64_t num_layers = 0;  // 0: the preset's
    int64_t vocab_size = 0;  // 0: the preset's
    int64_t num_experts = 0;  // 0: the preset's
    float successor_gain = 0.0f;
};

std::string preset_names() {
    std::string names;
    for (const ModelPreset& preset : model_presets()) names += (names.empty() ? "" : ", ") + preset.name;
    return names;
}

Status run_synth(const SynthCommandOptions& options) {
    std::optional<ModelPreset> preset = find_preset(options.preset);
    if (!preset) return invalid_argument(fmt::format("unknown preset '{}'; choose one of: {}", options.preset, preset_names()));
    TERN_RETURN_IF_ERROR(shrink_preset(&*preset, options.num_layers, options.vocab_size, options.num_experts));
    const std::optional<DType> type = dtype_from_name(options.type);
    if (!type) return invalid_argument(fmt::format("unknown weight type '{}'; use f32, f16, bf16, q8_0, q4_0, q4_K or q6_K", options.type));
    ThreadPool pool(options.num_threads);
    TERN_RETURN_IF_ERROR(write_synth_model(*preset, SynthOptions{*type, options.seed, options.successor_gain},
                                           options.output_path, &pool));
    std::cerr << fmt::format("wrote {} ({}, {} weights, seed {})\n", options.output_path, preset->description,
                             dtype_name(*type), options.seed);
    return Status::ok();
}

}  // namespace

void register_synth(CLI::App& app) {
    auto options = std::make_shared<SynthCommandOptions>();
    CLI::App* command = app.add_subcommand("synth", "Write a GGUF with random weights in a real model's shape");
    command->add_option("--preset", options->preset, "Model shape: " + preset_names())->capture_default_str();
    command->add_option("--type", options->type, "Weight type: f32, f16, bf16, q8_0, q4_0, q4_K, q6_K")->capture_default_str();
    command->add_option("-o,--output", options->output_path, "Output GGUF path")->required();
    command->add_option("--seed", options->seed, "Random seed")->capture_default_str();
    command->add_option("--layers", options->num_layers, "Layers (default: the preset's)")->check(CLI::Range(1, 1024));
    command->add_option("--vocab-size", options->vocab_size, "Vocabulary size (default: the preset's; >= 512)")
        ->check(CLI::Range(512, 1 << 20));
    command->add_option("--experts", options->num_experts, "Experts of a mixture-of-experts preset (default: the "
                        "preset's)")->check(CLI::Range(1, 4096));
    command->add_option("--successor-gain", options->successor_gain, "Make each token mostly predict one successor "
                        "(token embeddings times this gain; 0: plain random weights). Its quantized copies then agree "
                        "with it often: draft models for speculative decoding")->check(CLI::Range(0.0f, 1000.0f));
    add_threads_option(command, &options->num_threads);
    set_action(command, [options] { return run_synth(*options); });
}

}  // namespace tern::apps
