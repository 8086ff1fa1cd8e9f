// tern quantize: a GGUF model's weight matrices requantized to another type (llama-quantize's per-tensor rules).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "apps/commands.h"
#include "formats/gguf.h"
#include "quantize/quantizer.h"
#include "tokenizer/tokenizer.h"

namespace tern::apps {
namespace {

struct QuantizeCommandOptions {
    std::string input_path;
    std::string output_path;
    std::string type;
    int num_threads = 2;
    std::string calib_path;  // text to gather activation statistics from
    std::string stats_path;  // statistics saved earlier with --save-stats
    std::string save_stats_path;
    int64_t calib_context = 128;
};

void draw_progress(int64_t done, int64_t total, const std::string& name) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(done * kWidth / std::max<int64_t>(total, 1));
    std::fprintf(stderr, "\r[%s%s] %lld/%lld %-40.40s", std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(kWidth - filled), ' ').c_str(), static_cast<long long>(done),
                 static_cast<long long>(total), name.c_str());
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
}

std::string mib(int64_t bytes) {
    return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

Result<std::optional<ActivationStats>> calibration_stats(const QuantizeCommandOptions& options, ThreadPool* pool) {
    if (!options.stats_path.empty()) {
        TERN_ASSIGN_OR_RETURN(ActivationStats stats, load_activation_stats(options.stats_path));
        return std::optional<ActivationStats>(std::move(stats));
    }
    if (options.calib_path.empty()) return std::optional<ActivationStats>();
    std::ifstream stream(options.calib_path, std::ios::binary);
    if (!stream) return not_found(fmt::format("cannot open calibration text {}", options.calib_path));
    std::stringstream text;
    text << stream.rdbuf();
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(options.input_path));
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::from_gguf(*file));
    const std::vector<int32_t> tokens = tokenizer->encode(text.str(), true, false);
    TERN_ASSIGN_OR_RETURN(ActivationStats stats,
                          collect_activation_stats(*file, tokens, options.calib_context, tokenizer->bos_id(), pool));
    if (!options.save_stats_path.empty()) TERN_RETURN_IF_ERROR(save_activation_stats(stats, options.save_stats_path));
    std::cerr << fmt::format("calibration: {} tokens of {}\n", stats.num_tokens, options.calib_path);
    return std::optional<ActivationStats>(std::move(stats));
}

Status run_quantize(const QuantizeCommandOptions& options) {
    const std::optional<QuantPreset> preset = parse_quant_preset(options.type);
    if (!preset) {
        return invalid_argument(
            fmt::format("unknown type '{}'; use Q8_0, Q4_0, Q4_K, Q5_K, Q6_K or Q4_K_M", options.type));
    }
    QuantizeOptions quantize_options;
    quantize_options.preset = *preset;
    if (isatty(fileno(stderr))) quantize_options.on_tensor_done = draw_progress;
    ThreadPool pool(options.num_threads);
    TERN_ASSIGN_OR_RETURN(std::optional<ActivationStats> stats, calibration_stats(options, &pool));
    if (stats) quantize_options.stats = &*stats;
    TERN_ASSIGN_OR_RETURN(QuantizeSummary summary,
                          quantize_model(options.input_path, options.output_path, quantize_options, &pool));
    std::string types;
    for (const auto& [type, count] : summary.type_counts)
        types += fmt::format("{}{}: {}", types.empty() ? "" : ", ", type, count);
    std::cout << fmt::format("wrote {} ({})\n", options.output_path, quant_preset_name(*preset));
    std::cout << fmt::format("file: {} -> {} ({:.1f}%); tensor data {} -> {}\n", mib(summary.bytes_before),
                             mib(summary.bytes_after),
                             100.0 * static_cast<double>(summary.bytes_after) /
                                 static_cast<double>(std::max<int64_t>(summary.bytes_before, 1)),
                             mib(summary.tensor_bytes_before), mib(summary.tensor_bytes_after));
    std::cout << fmt::format("tensors by type: {}; requantized {}, row-size fallbacks {}\n", types,
                             summary.num_requantized, summary.num_fallbacks);
    if (!summary.calib_alphas.empty()) {
        double total = 0.0;
        for (const auto& [input, alpha] : summary.calib_alphas) total += alpha;
        std::cout << fmt::format("calibrated: {} scaled inputs, mean alpha {:.2f}\n", summary.calib_alphas.size(),
                                 total / static_cast<double>(summary.calib_alphas.size()));
    }
    return Status::ok();
}

}  // namespace

void register_quantize(CLI::App& app) {
    auto options = std::make_shared<QuantizeCommandOptions>();
    CLI::App* command = app.add_subcommand("quantize", "Requantize a GGUF model's weights (llama-quantize's rules)");
    command->add_option("input", options->input_path, "Input GGUF")->required();
    command->add_option("output", options->output_path, "Output GGUF")->required();
    command->add_option("--type", options->type, "Q8_0, Q4_0, Q4_K, Q5_K, Q6_K or Q4_K_M")->required();
    add_threads_option(command, &options->num_threads);
    command->add_option("--calib", options->calib_path, "Calibration text: AWQ-style per-channel scales");
    command->add_option("--calib-ctx", options->calib_context, "Calibration window in tokens")->capture_default_str();
    command->add_option("--save-stats", options->save_stats_path, "With --calib: save the activation statistics");
    command->add_option("--stats", options->stats_path, "Use activation statistics saved by --save-stats");
    set_action(command, [options] { return run_quantize(*options); });
}

}  // namespace tern::apps
