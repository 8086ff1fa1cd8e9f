// tern generate: text in, text out for one prompt, with the sampling settings of llama.cpp's CLI.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "generate/generator.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tern::apps {
namespace {

struct GenerateOptions {
    std::string model_path;
    std::string prompt;
    int64_t num_tokens = 64;
    int64_t context_length = 0;
    int num_threads = 2;
    SamplingParams sampling;
    bool ignore_eos = false;
    bool json = false;
};

double tokens_per_second(int64_t count, double ms) { return ms > 0 ? count * 1000.0 / ms : 0.0; }

nlohmann::json json_report(const std::vector<int32_t>& prompt, const GenerationResult& result, const std::string& text,
                           double load_ms) {
    const int64_t num_decoded = result.tokens.empty() ? 0 : static_cast<int64_t>(result.tokens.size()) - 1;
    return {{"prompt_tokens", prompt},
            {"tokens", result.tokens},
            {"text", text},
            {"finish_reason", result.finish_reason},
            {"timings",
             {{"load_ms", load_ms},
              {"prefill_ms", result.prefill_ms},
              {"decode_ms", result.decode_ms},
              {"prefill_tokens_per_s", tokens_per_second(static_cast<int64_t>(prompt.size()), result.prefill_ms)},
              {"decode_tokens_per_s", tokens_per_second(num_decoded, result.decode_ms)}}}};
}

Status run_generate(const GenerateOptions& options) {
    const auto load_start = std::chrono::steady_clock::now();
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                          Model::load(options.model_path, {.context_length = options.context_length}));
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::from_gguf(model->file()));
    const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
    if (tokenizer->vocab_size() != model->hparams().vocab_size) {
        return invalid_argument(fmt::format("{}: the tokenizer has {} tokens but the embedding has {} rows",
                                            options.model_path, tokenizer->vocab_size(), model->hparams().vocab_size));
    }
    const std::vector<int32_t> prompt = tokenizer->encode(options.prompt, /*add_special=*/true, /*parse_special=*/true);
    GenerationOptions generation;
    generation.max_new_tokens = options.num_tokens;
    generation.context_length = options.context_length;
    generation.sampling = options.sampling;
    if (!options.ignore_eos) generation.stop_tokens = tokenizer->end_of_generation_ids();
    ThreadPool pool(options.num_threads);
    StreamingDetokenizer detokenizer(*tokenizer);
    std::string text;
    if (!options.json) std::cout << options.prompt << std::flush;
    TERN_ASSIGN_OR_RETURN(GenerationResult result, generate(*model, pool, prompt, generation, [&](int32_t token) {
        if (tokenizer->is_end_of_generation(token)) return true;
        const std::string piece = detokenizer.push(token);
        text += piece;
        if (!options.json) std::cout << piece << std::flush;
        return true;
    }));
    text += detokenizer.flush();
    if (options.json) {
        std::cout << json_report(prompt, result, text, load_ms).dump() << "\n";
        return Status::ok();
    }
    const int64_t num_decoded = result.tokens.empty() ? 0 : static_cast<int64_t>(result.tokens.size()) - 1;
    std::cout << "\n";
    std::cerr << fmt::format("load {:.0f} ms | prefill {} tokens {:.1f} ms ({:.1f} tok/s) | decode {} tokens {:.1f} ms "
                             "({:.1f} tok/s) | finish: {}\n",
                             load_ms, prompt.size(), result.prefill_ms,
                             tokens_per_second(static_cast<int64_t>(prompt.size()), result.prefill_ms), num_decoded,
                             result.decode_ms, tokens_per_second(num_decoded, result.decode_ms), result.finish_reason);
    return Status::ok();
}

}  // namespace

void register_generate(CLI::App& app) {
    auto options = std::make_shared<GenerateOptions>();
    CLI::App* command = app.add_subcommand("generate", "Generate text from a prompt with a GGUF model");
    add_model_option(command, &options->model_path, "GGUF model file")->required();
    command->add_option("-p,--prompt", options->prompt, "Prompt text")->required();
    command->add_option("-n,--num-tokens", options->num_tokens, "Tokens to generate")->capture_default_str()
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
    command->add_option("-c,--ctx-size", options->context_length,
                        "Context length: prompt + generated tokens (0 = the model's; a LongRoPE model takes its long "
                        "RoPE factors past its original context)")
        ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
    add_threads_option(command, &options->num_threads);
    command->add_option("--temp", options->sampling.temperature, "Temperature (0 = greedy)")->capture_default_str();
    command->add_option("--top-k", options->sampling.top_k, "Top-k (0 = off)")->capture_default_str();
    command->add_option("--top-p", options->sampling.top_p, "Top-p (1 = off)")->capture_default_str();
    command->add_option("--min-p", options->sampling.min_p, "Min-p (0 = off)")->capture_default_str();
    command->add_option("--repeat-penalty", options->sampling.repetition_penalty, "Repetition penalty (1 = off)")
        ->capture_default_str();
    command->add_option("--presence-penalty", options->sampling.presence_penalty, "Presence penalty")->capture_default_str();
    command->add_option("--frequency-penalty", options->sampling.frequency_penalty, "Frequency penalty")
        ->capture_default_str();
    command->add_option("--seed", options->sampling.seed, "Sampling seed")->capture_default_str();
    command->add_flag("--ignore-eos", options->ignore_eos, "Keep generating after an end-of-generation token");
    command->add_flag("--json", options->json, "Print one JSON object: prompt_tokens, tokens, text, timings");
    set_action(command, [options] { return run_generate(*options); });
}

}  // namespace tern::apps
