// tern bench serve / tern bench compare: flags (named after `vllm bench serve`) -> BenchConfig -> bench library.
#include <iostream>

#include "apps/commands.h"
#include "bench/bench_serve.h"

namespace tern::apps {
namespace {

// Flags whose text needs parsing beyond CLI11's conversions (inf rates, lists, prompt kinds).
struct RawServeFlags {
    std::string request_rate = "inf";
    std::string burstiness = "1";
    std::string sweep_concurrency;
    std::string sweep_rate;
    std::string prompt_kind = "text";
    int64_t input_len = 1024;
    int64_t output_len = 128;
    double range_ratio = 0;
    bool no_progress = false;
    double temperature = 0;
    double top_p = 0;
    int64_t top_k = 0;
};

Status finish_config(const RawServeFlags& raw, const CLI::App& command, bench::BenchConfig* config) {
    TERN_ASSIGN_OR_RETURN(config->request_rate, bench::parse_rate(raw.request_rate, "--request-rate"));
    TERN_ASSIGN_OR_RETURN(config->burstiness, bench::parse_rate(raw.burstiness, "--burstiness"));
    if (!raw.sweep_concurrency.empty()) {
        TERN_ASSIGN_OR_RETURN(config->sweep_concurrency,
                              bench::parse_int_list(raw.sweep_concurrency, "--sweep-concurrency"));
    }
    if (!raw.sweep_rate.empty()) {
        TERN_ASSIGN_OR_RETURN(config->sweep_rate, bench::parse_rate_list(raw.sweep_rate, "--sweep-rate"));
    }
    config->workload.input = bench::LengthSpec::fixed(raw.input_len, raw.range_ratio);
    config->workload.output = bench::LengthSpec::fixed(raw.output_len, raw.range_ratio);
    config->workload.output.min_length = 1;
    config->workload.prompt_kind =
        raw.prompt_kind == "token-ids" ? bench::PromptKind::kTokenIds : bench::PromptKind::kText;
    config->progress = !raw.no_progress;
    if (command.count("--temperature") > 0) config->temperature = raw.temperature;
    if (command.count("--top-p") > 0) config->top_p = raw.top_p;
    if (command.count("--top-k") > 0) config->top_k = raw.top_k;
    return Status::ok();
}

void add_target_flags(CLI::App* command, bench::BenchConfig* config) {
    command->add_option("--base-url", config->base_url, "Server URL, e.g. http://127.0.0.1:8000")
        ->capture_default_str();
    command->add_option("--endpoint", config->endpoint, "API path: /v1/completions or /v1/chat/completions")
        ->capture_default_str();
    command->add_option("--model", config->model, "Model name sent in requests (default: the first at /v1/models)");
    command->add_option("--header", config->headers, "KEY=VALUE header sent with every request (repeatable)");
}

void add_load_flags(CLI::App* command, bench::BenchConfig* config, RawServeFlags* raw) {
    command->add_option("--num-prompts", config->num_prompts, "Requests to send")->capture_default_str();
    command->add_option("--request-rate", raw->request_rate,
                        "Requests per second (Poisson arrivals); inf = all at once")
        ->capture_default_str();
    command->add_option("--burstiness", raw->burstiness, "Gamma shape of the gaps: 1 = Poisson, <1 burstier")
        ->capture_default_str();
    command->add_option("--max-concurrency", config->max_concurrency, "Most requests in flight (closed loop)");
    command->add_option("--duration", config->duration_s, "Stop sending after this many seconds (0 = no limit)");
    command->add_option("--num-warmups", config->num_warmups, "Warm-up requests sent first, not counted")
        ->capture_default_str();
    command->add_option("--seed", config->seed, "Seed for prompts, lengths and arrivals")->capture_default_str();
    command->add_option("--sweep-concurrency", raw->sweep_concurrency, "One run per max concurrency, e.g. 1,2,4,8");
    command->add_option("--sweep-rate", raw->sweep_rate, "One run per request rate, e.g. 1,2,4,inf");
}

void add_workload_flags(CLI::App* command, bench::BenchConfig* config, RawServeFlags* raw) {
    bench::WorkloadOptions& workload = config->workload;
    command->add_option("--dataset-name", workload.dataset_name, "random or jsonl")->capture_default_str();
    command->add_option("--dataset-path", workload.dataset_path, "JSONL file: {\"prompt\": ..., \"max_tokens\": N}");
    command->add_option("--input-len,--random-input-len", raw->input_len, "Prompt tokens")->capture_default_str();
    command->add_option("--output-len,--random-output-len", raw->output_len, "Tokens to generate (max_tokens)")
        ->capture_default_str();
    command->add_option("--range-ratio,--random-range-ratio", raw->range_ratio,
                        "Lengths uniform in [L(1-r), L(1+r)]")->capture_default_str();
    command->add_option("--prefix-len,--random-prefix-len", workload.prefix_len,
                        "Tokens of one shared prefix before every prompt")->capture_default_str();
    command->add_option("--input-len-dist", config->input_len_dist, "Prompt lengths as percentiles, fitted to a "
                                                                   "log-normal: p50=800,p95=3000,p99=8000");
    command->add_option("--output-len-dist", config->output_len_dist, "Output lengths as percentiles (log-normal)");
    command->add_option("--lengths-file", workload.lengths_file, "File of 'input_len output_len' lines to replay");
    command->add_option("--prompt-kind", raw->prompt_kind, "text (words) or token-ids (exact, /v1/completions only)")
        ->check(CLI::IsMember({"text", "token-ids"}))->capture_default_str();
    command->add_option("--vocab-size", workload.vocab_size, "Vocabulary size for token-id prompts")
        ->capture_default_str();
}

void add_request_flags(CLI::App* command, bench::BenchConfig* config, RawServeFlags* raw) {
    command->add_flag("--ignore-eos", config->ignore_eos, "Ask the server to generate exactly max_tokens");
    command->add_option("--temperature", raw->temperature, "Sampling temperature sent in requests");
    command->add_option("--top-p", raw->top_p, "Top-p sent in requests");
    command->add_option("--top-k", raw->top_k, "Top-k sent in requests");
    command->add_option("--extra-body", config->extra_body, "JSON object merged into every request body");
    command->add_option("--connect-timeout", config->connect_timeout_s, "Seconds to connect")->capture_default_str();
    command->add_option("--read-timeout", config->read_timeout_s, "Longest wait for the next byte, seconds")
        ->capture_default_str();
    command->add_option("--request-timeout", config->request_timeout_s, "Longest request, seconds")
        ->capture_default_str();
}

void add_output_flags(CLI::App* command, bench::BenchConfig* config, RawServeFlags* raw) {
    command->add_option("--label", config->label, "Name of this run in reports and the ledger");
    command->add_option("--goodput", config->goodput, "SLOs in ms for goodput: ttft:MS tpot:MS e2el:MS");
    command->add_option("--save-result", config->save_result, "Write config, requests, summary, commit, machine "
                                                              "to this JSON file");
    command->add_option("--ledger", config->ledger, "Append one CSV row per run to this file");
    command->add_option("--charts", config->charts_dir, "Write SVG charts to this folder");
    command->add_option("--metadata", config->metadata, "KEY=VALUE saved in the result file (repeatable)");
    command->add_flag("--server-metrics", config->server_metrics,
                      "Read the server's /metrics histograms before and after each run and report their means");
    command->add_flag("--disable-tqdm,--no-progress", raw->no_progress, "No progress bar on stderr");
}

void register_compare(CLI::App& bench) {
    auto command_options = std::make_shared<bench::CompareCommand>();
    CLI::App* command = bench.add_subcommand("compare", "Compare two `bench serve --save-result` files (A -> B)");
    command->add_option("a", command_options->path_a, "Baseline result JSON")->required();
    command->add_option("b", command_options->path_b, "New result JSON")->required();
    command->add_option("--threshold", command_options->options.threshold_pct,
                        "Smallest change in percent that counts")->capture_default_str()->check(CLI::Range(0.0, 1e6));
    command->add_flag("--fail-on-regression", command_options->fail_on_regression,
                      "Exit 1 when some figure got worse beyond noise");
    set_action(command, [command_options] { return bench::run_bench_compare(*command_options, std::cout); });
}

}  // namespace

void register_bench_serve(CLI::App& bench) {
    auto config = std::make_shared<bench::BenchConfig>();
    auto raw = std::make_shared<RawServeFlags>();
    CLI::App* command = bench.add_subcommand("serve", "Load-test an OpenAI-compatible server (vllm bench serve flags)");
    add_target_flags(command, config.get());
    add_load_flags(command, config.get(), raw.get());
    add_workload_flags(command, config.get(), raw.get());
    add_request_flags(command, config.get(), raw.get());
    add_output_flags(command, config.get(), raw.get());
    set_action(command, [config, raw, command] {
        TERN_RETURN_IF_ERROR(finish_config(*raw, *command, config.get()));
        return bench::run_bench_serve(*config, std::cout);
    });
    register_compare(bench);
}

}  // namespace tern::apps
