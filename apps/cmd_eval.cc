// tern eval: perplexity of a model on a text file (as llama-perplexity), and an A/B comparison of a base model
// with its quantized copy (perplexity, KL divergence, top-1 agreement, size, decode speed).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/commands.h"
#include "eval/compare.h"
#include "eval/perplexity.h"
#include "tokenizer/tokenizer.h"

namespace tern::apps {
namespace {

struct EvalOptions {
    std::vector<std::string> model_paths;
    std::string text_path;
    int64_t context = 128;
    int num_threads = 2;
    bool json = false;
};

Result<std::string> read_text(const std::string& path) {
    std::ifstream stream(path, std::ios::binary);
    if (!stream) return not_found(fmt::format("cannot open text file {}", path));
    std::stringstream text;
    text << stream.rdbuf();
    return text.str();
}

struct LoadedText {
    std::vector<int32_t> tokens;
    int32_t bos_id = -1;
};

Result<LoadedText> tokenize_file(const Model& model, const std::string& path) {
    TERN_ASSIGN_OR_RETURN(std::string text, read_text(path));
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::from_gguf(model.file()));
    return LoadedText{tokenizer->encode(text, true, false), tokenizer->bos_id()};
}

int64_t file_bytes(const std::string& path) {
    std::error_code error;
    return static_cast<int64_t>(std::filesystem::file_size(path, error));
}

// The windows' length is the context: a LongRoPE model chooses its factors by it, as llama-perplexity's by its -c.
Result<std::unique_ptr<Model>> load_for_eval(const std::string& path, const EvalOptions& options) {
    ModelOptions model_options;
    model_options.context_length = options.context;
    return Model::load(path, model_options);
}

Status run_perplexity(const EvalOptions& options) {
    if (options.model_paths.size() != 1) return invalid_argument("eval perplexity takes one -m MODEL");
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, load_for_eval(options.model_paths[0], options));
    TERN_ASSIGN_OR_RETURN(LoadedText text, tokenize_file(*model, options.text_path));
    ThreadPool pool(options.num_threads);
    TERN_ASSIGN_OR_RETURN(PerplexityResult result,
                          compute_perplexity(*model, text.tokens, options.context, text.bos_id, &pool));
    if (options.json) {
        std::cout << nlohmann::json{{"model", options.model_paths[0]},
                                    {"perplexity", result.perplexity},
                                    {"perplexity_error", result.perplexity_error},
                                    {"tokens", result.num_tokens},
                                    {"scored_tokens", result.num_scored},
                                    {"windows", result.num_windows},
                                    {"ctx", options.context}}
                         .dump(2)
                  << "\n";
    } else {
        std::cout << fmt::format("{} tokens, {} windows of {}, {} scored\nPPL = {:.4f} +/- {:.4f}\n", result.num_tokens,
                                 result.num_windows, options.context, result.num_scored, result.perplexity,
                                 result.perplexity_error);
    }
    return Status::ok();
}

nlohmann::json side_json(const std::string& path, const PerplexityResult& result, double speed) {
    return {{"model", path},
            {"perplexity", result.perplexity},
            {"perplexity_error", result.perplexity_error},
            {"bytes", file_bytes(path)},
            {"tokens_per_s", speed}};
}

void print_table(const EvalOptions& options, const CompareResult& result, double base_speed, double quant_speed) {
    const auto mib = [](int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); };
    std::cout << fmt::format("{} scored tokens ({} windows of {})\n\n", result.num_scored, result.base.num_windows,
                             options.context);
    std::cout << "| model | file | size (MiB) | PPL | decode tok/s |\n| --- | --- | --- | --- | --- |\n";
    const char* labels[] = {"base", "quant"};
    const PerplexityResult* sides[] = {&result.base, &result.quant};
    const double speeds[] = {base_speed, quant_speed};
    for (int idx = 0; idx < 2; ++idx) {
        const std::string& path = options.model_paths[static_cast<size_t>(idx)];
        std::cout << fmt::format("| {} | {} | {:.3f} | {:.4f} +/- {:.4f} | {:.1f} |\n", labels[idx],
                                 std::filesystem::path(path).filename().string(), mib(file_bytes(path)),
                                 sides[idx]->perplexity, sides[idx]->perplexity_error, speeds[idx]);
    }
    std::cout << fmt::format("\nKLD mean {:.6f}, KLD p99 {:.6f}, top-1 agreement {:.2f}%\n", result.kld_mean,
                             result.kld_p99, 100.0 * result.top1_agreement);
}

Status run_compare(const EvalOptions& options) {
    if (options.model_paths.size() != 2) return invalid_argument("eval compare takes -m BASE -m QUANT");
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Model> base, load_for_eval(options.model_paths[0], options));
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Model> quant, load_for_eval(options.model_paths[1], options));
    TERN_ASSIGN_OR_RETURN(LoadedText text, tokenize_file(*base, options.text_path));
    ThreadPool pool(options.num_threads);
    TERN_ASSIGN_OR_RETURN(CompareResult result,
                          compare_models(*base, *quant, text.tokens, options.context, text.bos_id, &pool));
    TERN_ASSIGN_OR_RETURN(double base_speed, measure_decode_speed(*base, text.tokens, &pool));
    TERN_ASSIGN_OR_RETURN(double quant_speed, measure_decode_speed(*quant, text.tokens, &pool));
    if (options.json) {
        std::cout << nlohmann::json{{"base", side_json(options.model_paths[0], result.base, base_speed)},
                                    {"quant", side_json(options.model_paths[1], result.quant, quant_speed)},
                                    {"kld_mean", result.kld_mean},
                                    {"kld_p99", result.kld_p99},
                                    {"top1_agreement", result.top1_agreement},
                                    {"scored_tokens", result.num_scored},
                                    {"ctx", options.context}}
                         .dump(2)
                  << "\n";
    } else {
        print_table(options, result, base_speed, quant_speed);
    }
    return Status::ok();
}

CLI::App* add_eval_subcommand(CLI::App* eval, const std::string& name, const std::string& help,
                              const std::shared_ptr<EvalOptions>& options) {
    CLI::App* command = eval->add_subcommand(name, help);
    command->add_option("-m,--model", options->model_paths, std::string("GGUF model (compare: BASE then QUANT)") + kModelOptionNote)
        ->transform(model_resolver())
        ->required();
    command->add_option("--file", options->text_path, "Text file to score")->required();
    command->add_option("--ctx", options->context, "Window length in tokens")->capture_default_str();
    add_threads_option(command, &options->num_threads);
    command->add_flag("--json", options->json, "Print one JSON object");
    return command;
}

}  // namespace

void register_eval(CLI::App& app) {
    CLI::App* eval = app.add_subcommand("eval", "Model quality: perplexity, base-vs-quantized comparison");
    eval->require_subcommand(1);
    auto perplexity = std::make_shared<EvalOptions>();
    set_action(add_eval_subcommand(eval, "perplexity", "Perplexity on a text (llama-perplexity's method)", perplexity),
               [perplexity] { return run_perplexity(*perplexity); });
    auto compare = std::make_shared<EvalOptions>();
    set_action(
        add_eval_subcommand(eval, "compare", "A/B: perplexity, KL divergence, top-1 agreement, size, speed", compare),
        [compare] { return run_compare(*compare); });
}

}  // namespace tern::apps
