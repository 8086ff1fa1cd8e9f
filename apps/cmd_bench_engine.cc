// tern bench engine: offline throughput of the serving engine (continuous batching, paged KV cache) on a synthetic
// workload, as vLLM's throughput benchmark; prints requests/s, tokens/s and TTFT / TPOT / ITL percentiles.
#include <fmt/format.h>

#include <iostream>

#include "apps/commands.h"
#include "apps/engine_flags.h"
#include "base/log.h"
#include "engine_bench/engine_bench.h"
#include "trace/trace.h"

namespace tern::apps {
namespace {

struct BenchEngineOptions {
    std::string model_path;
    int num_threads = 2;
    int64_t input_len = 1024;
    int64_t output_len = 128;
    double range_ratio = 0.0;
    EngineFlags engine;
    engine::EngineBenchOptions bench;
    std::string trace_path;
    bool json = false;
};

Status run_bench_engine(BenchEngineOptions options) {
    TERN_ASSIGN_OR_RETURN(engine::EngineConfig config, engine_config_from_flags(options.engine));
    options.bench.workload.input = bench::LengthSpec::fixed(options.input_len, options.range_ratio);
    options.bench.workload.output = bench::LengthSpec::fixed(options.output_len, options.range_ratio);
    TERN_RETURN_IF_ERROR(bench::validate(options.bench.workload.input, "--input-len"));
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                          Model::load(options.model_path, {.context_length = config.max_model_len}));
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Model> draft_model, load_draft_model(options.engine, config));
    ThreadPool pool(options.num_threads);
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> engine,
                          engine::Engine::create(*model, pool, config, draft_model.get()));
    log_info("{}", engine->capacity().describe());
    TERN_RETURN_IF_ERROR(apply_step_budget(options.engine, *engine).status());
    trace::FileTrace trace(options.trace_path);
    TERN_RETURN_IF_ERROR(trace.start());
    TERN_ASSIGN_OR_RETURN(engine::EngineBenchResult result,
                          engine::run_engine_bench(*engine, model->hparams().vocab_size, options.bench));
    TERN_RETURN_IF_ERROR(trace.finish());
    if (options.json) {
        nlohmann::json json = engine::engine_bench_json(result);
        json["model"] = options.model_path;
        json["threads"] = options.num_threads;
        json["max_batched_tokens"] = engine->config().max_batched_tokens;
        json["max_concurrency"] = options.bench.max_concurrency;
        json["prefix_caching"] = config.enable_prefix_caching;
        json["kv_cache_type"] = std::string(kv_type_name(config.kv_type));
        if (draft_model) json["draft_model"] = options.engine.draft_model;
        std::cout << json.dump(2) << "\n";
    } else {
        std::cout << format_engine_bench(result);
    }
    return Status::ok();
}

}  // namespace

void register_bench_engine(CLI::App& bench) {
    auto options = std::make_shared<BenchEngineOptions>();
    CLI::App* command = bench.add_subcommand("engine", "Offline throughput of the serving engine on a synthetic load");
    add_model_option(command, &options->model_path, "GGUF model file")->required();
    add_threads_option(command, &options->num_threads);
    bench::WorkloadOptions& workload = options->bench.workload;
    command->add_option("--num-prompts", workload.num_prompts, "Requests to run")->capture_default_str();
    command->add_option("--input-len", options->input_len, "Prompt tokens")->capture_default_str();
    command->add_option("--output-len", options->output_len, "Tokens generated per request")->capture_default_str();
    command->add_option("--range-ratio", options->range_ratio,
                        "Lengths uniform in [len * (1 - r), len * (1 + r)]")->capture_default_str();
    command->add_option("--prefix-len", workload.prefix_len, "Tokens of one prefix shared by every prompt");
    command->add_option("--seed", workload.seed, "Seed of prompts and lengths")->capture_default_str();
    command->add_option("--max-concurrency", options->bench.max_concurrency,
                        "Requests in flight at most (0 = all at once)")->capture_default_str();
    command->add_option("--late-prompt-len", options->bench.late_prompt_len,
                        "Add one request of this many prompt tokens after --late-prompt-after seconds");
    command->add_option("--late-prompt-after", options->bench.late_prompt_after_s, "Seconds before the late prompt");
    options->engine.max_batched_tokens = "2048";  // offline throughput: the largest steps, as vLLM's LLM class
    add_engine_flags(command, &options->engine);
    command->add_option("--trace", options->trace_path, "Write a Chrome trace (JSON, for Perfetto) of the run to FILE");
    command->add_flag("--json", options->json, "Print one JSON object");
    set_action(command, [options] { return run_bench_engine(*options); });
}

}  // namespace tern::apps
