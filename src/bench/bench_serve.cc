#include "bench/bench_serve.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include "bench/charts.h"
#include "bench/ledger.h"
#include "bench/machine_info.h"
#include "bench/progress.h"
#include "bench/report.h"
#include "bench/result.h"
#include "bench/server_metrics.h"

namespace tern::bench {
namespace {

using std::chrono::milliseconds;

milliseconds to_ms(double seconds) { return milliseconds(static_cast<int64_t>(std::llround(seconds * 1000))); }

Result<net::HttpClientOptions> client_options(const BenchConfig& config) {
    net::HttpClientOptions options;
    options.connect_timeout = to_ms(config.connect_timeout_s);
    options.read_timeout = to_ms(config.read_timeout_s);
    options.total_timeout = to_ms(config.request_timeout_s);
    // As vLLM's client: an API key in the environment is sent as a bearer token.
    if (const char* key = std::getenv("OPENAI_API_KEY"); key != nullptr && *key != '\0') {
        options.headers.emplace_back("Authorization", fmt::format("Bearer {}", key));
    }
    for (const std::string& header : config.headers) {
        TERN_ASSIGN_OR_RETURN(auto pair, parse_key_value(header, "--header"));
        options.headers.push_back(std::move(pair));
    }
    return options;
}

// vLLM's fallback when --model is not given: the first model the server lists.
Result<std::string> first_served_model(const net::BaseUrl& base, const net::HttpClientOptions& options) {
    net::HttpClient client(base, options);
    Result<net::HttpResponse> response = client.get("/v1/models");
    if (!response.is_ok()) {
        return Status(StatusCode::kUnavailable, fmt::format("cannot list models at {}/v1/models ({}); is the server "
                                                            "running? Pass --model to skip this",
                                                            base.origin(), response.status().message()));
    }
    const auto body = nlohmann::json::parse(response.value().body, nullptr, /*allow_exceptions=*/false);
    if (response.value().status != 200 || !body.is_object() || !body.contains("data") || !body["data"].is_array() ||
        body["data"].empty() || !body["data"][0].contains("id") || !body["data"][0]["id"].is_string()) {
        return invalid_argument(fmt::format("{}/v1/models answered HTTP {} without a model id; pass --model",
                                            base.origin(), response.value().status));
    }
    return body["data"][0]["id"].get<std::string>();
}

RequestTemplate make_template(const BenchConfig& config, const std::string& model) {
    RequestTemplate request;
    request.path = config.endpoint;
    const std::string_view path = config.endpoint;
    request.endpoint = path.size() >= 16 && path.substr(path.size() - 16) == "chat/completions"
                           ? api::Endpoint::kChatCompletions
                           : api::Endpoint::kCompletions;
    request.model = model;
    request.ignore_eos = config.ignore_eos;
    request.temperature = config.temperature;
    request.top_p = config.top_p;
    request.top_k = config.top_k;
    if (!config.extra_body.empty()) request.extra_body = nlohmann::json::parse(config.extra_body, nullptr, false);
    return request;
}

std::vector<RunPoint> plan_runs(const BenchConfig& config) {
    std::vector<RunPoint> runs;
    RunPoint base;
    base.request_rate = config.request_rate;
    base.burstiness = config.burstiness;
    base.max_concurrency = config.max_concurrency;
    for (int64_t concurrency : config.sweep_concurrency) {
        runs.push_back(base);
        runs.back().max_concurrency = concurrency;
    }
    for (double rate : config.sweep_rate) {
        runs.push_back(base);
        runs.back().request_rate = rate;
    }
    if (runs.empty()) runs.push_back(base);
    return runs;
}

LoadOptions load_options(const BenchConfig& config, const RunPoint& run) {
    LoadOptions options;
    options.arrivals = {run.request_rate, run.burstiness};
    options.max_concurrency = run.max_concurrency;
    options.num_requests = config.num_prompts;
    options.duration_s = config.duration_s;
    options.seed = config.seed;
    return options;
}

std::string describe_run(const BenchConfig& config, const RunPoint& run) {
    const char* process = run.burstiness == 1.0 ? "Poisson" : "Gamma";
    const std::string count = config.duration_s > 0
                                  ? fmt::format("up to {} requests in {:g} s", config.num_prompts, config.duration_s)
                                  : fmt::format("{} requests", config.num_prompts);
    return fmt::format("{} | rate {} ({}, burstiness {:g}), max concurrency {}", count,
                       std::isfinite(run.request_rate) ? fmt::format("{:g}/s", run.request_rate) : "inf", process,
                       run.burstiness, run.max_concurrency > 0 ? std::to_string(run.max_concurrency) : "none");
}

Status warm_up(const BenchConfig& config, const SenderFactory& make_sender, const RunPoint& first_run) {
    if (config.num_warmups == 0) return Status::ok();
    WorkloadOptions workload = config.workload;
    workload.num_prompts = config.num_warmups;
    workload.seed = config.seed + 7919;  // other prompts than the measured ones, so no prefix-cache hits from them
    TERN_ASSIGN_OR_RETURN(std::vector<RequestSpec> specs, build_workload(workload));
    LoadOptions options;
    options.max_concurrency = first_run.max_concurrency;
    options.num_requests = config.num_warmups;
    ProgressBar progress(config.num_warmups, "warm-up", config.progress);
    const LoadResult result = run_load(specs, options, make_sender, &progress);
    for (const RequestRecord& record : result.records) {
        if (record.success) return Status::ok();
    }
    const std::string error = result.records.empty() ? "no request sent" : result.records.front().error;
    return Status(StatusCode::kUnavailable, fmt::format("every warm-up request failed: {}", error));
}

std::string length_text(const LengthSpec& spec, const std::string& dist) {
    return dist.empty() ? std::to_string(spec.length) : dist;
}

std::vector<LedgerRow> ledger_rows(const BenchConfig& config, const BenchResult& result) {
    std::vector<LedgerRow> rows;
    for (const RunPoint& run : result.runs) {
        const Summary& s = run.summary;
        auto number = [](double value) { return fmt::format("{:.4f}", value); };
        rows.push_back({
            {"date", result.date}, {"label", result.label}, {"git_commit", result.git_commit},
            {"base_url", config.base_url}, {"endpoint", config.endpoint}, {"model", result.config["model"]},
            {"dataset", config.workload.dataset_name}, {"num_prompts", std::to_string(config.num_prompts)},
            {"request_rate", std::isfinite(run.request_rate) ? number(run.request_rate) : "inf"},
            {"burstiness", number(run.burstiness)},
            {"max_concurrency", run.max_concurrency > 0 ? std::to_string(run.max_concurrency) : ""},
            {"input_len", length_text(config.workload.input, config.input_len_dist)},
            {"output_len", length_text(config.workload.output, config.output_len_dist)},
            {"prefix_len", std::to_string(config.workload.prefix_len)},
            {"ignore_eos", config.ignore_eos ? "true" : "false"},
            {"completed", std::to_string(s.completed)}, {"failed", std::to_string(s.failed)},
            {"duration_s", number(s.duration_s)}, {"request_throughput", number(s.request_throughput)},
            {"output_throughput", number(s.output_throughput)},
            {"total_token_throughput", number(s.total_token_throughput)},
            {"request_goodput", s.request_goodput ? number(*s.request_goodput) : ""},
            {"mean_ttft_ms", number(s.ttft_ms.mean)}, {"median_ttft_ms", number(s.ttft_ms.median)},
            {"p99_ttft_ms", number(s.ttft_ms.p99)}, {"mean_tpot_ms", number(s.tpot_ms.mean)},
            {"p99_tpot_ms", number(s.tpot_ms.p99)}, {"mean_itl_ms", number(s.itl_ms.mean)},
            {"p99_itl_ms", number(s.itl_ms.p99)}, {"mean_e2el_ms", number(s.e2el_ms.mean)},
            {"p99_e2el_ms", number(s.e2el_ms.p99)}, {"result_file", config.save_result},
        });
    }
    return rows;
}

Status write_outputs(const BenchConfig& config, const BenchResult& result, std::ostream& out) {
    if (!config.save_result.empty()) {
        TERN_RETURN_IF_ERROR(save_result(result, config.save_result));
        out << "\nResult saved to " << config.save_result << "\n";
    }
    if (!config.ledger.empty()) {
        TERN_RETURN_IF_ERROR(append_ledger_rows(config.ledger, ledger_rows(config, result)));
        out << "Ledger row" << (result.runs.size() > 1 ? "s" : "") << " appended to " << config.ledger << "\n";
    }
    if (!config.charts_dir.empty()) {
        TERN_ASSIGN_OR_RETURN(std::vector<std::string> paths, write_charts(result.runs, config.charts_dir));
        out << "Charts: " << fmt::format("{}", fmt::join(paths, ", ")) << "\n";
    }
    return Status::ok();
}

BenchResult make_result(const BenchConfig& config, const std::string& model) {
    BenchResult result;
    result.label = config.label.empty() ? "tern-bench" : config.label;
    result.date = local_timestamp();
    result.git_commit = build_git_commit();
    result.machine = machine_facts();
    result.config = to_json(config);
    result.config["model"] = model;
    for (const std::string& item : config.metadata) {
        Result<std::pair<std::string, std::string>> pair = parse_key_value(item, "--metadata");
        if (pair.is_ok()) result.metadata[pair.value().first] = pair.value().second;
    }
    return result;
}

Status check_metadata(const BenchConfig& config) {
    for (const std::string& item : config.metadata) TERN_RETURN_IF_ERROR(parse_key_value(item, "--metadata").status());
    return Status::ok();
}

// Scrapes /metrics when --server-metrics is on; a server without it only costs a warning. After a run, a server
// may record its last requests a moment after their final bytes, so `settle` scrapes until two reads agree.
std::optional<MetricsSnapshot> maybe_scrape(const BenchConfig& config, net::HttpClient& client, bool settle) {
    if (!config.server_metrics) return std::nullopt;
    Result<MetricsSnapshot> snapshot = scrape_metrics(client);
    for (int attempt = 0; settle && snapshot.is_ok() && attempt < 10; ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        Result<MetricsSnapshot> again = scrape_metrics(client);
        if (!again.is_ok()) break;
        const bool stable = histogram_deltas(snapshot.value(), again.value()).empty();
        snapshot = std::move(again);
        if (stable) break;
    }
    if (!snapshot.is_ok()) {
        std::cerr << "tern bench serve: warning: --server-metrics: " << snapshot.status().message() << "\n";
        return std::nullopt;
    }
    return snapshot.value();
}

// Sends one run's load (with /metrics scrapes around it when asked) and summarizes it.
void measure_run(const BenchConfig& config, const net::BaseUrl& base, const net::HttpClientOptions& options,
                 const Workload& workload, const SenderFactory& make_sender, bool in_sweep, RunPoint* run) {
    net::HttpClient metrics_client(base, options);
    const std::optional<MetricsSnapshot> before = maybe_scrape(config, metrics_client, /*settle=*/false);
    {
        ProgressBar progress(config.num_prompts, in_sweep ? run_label(*run) : "", config.progress);
        const SpecFn spec_at = [&workload](int64_t index) { return workload.at(index); };
        run->load = run_load(spec_at, load_options(config, *run), make_sender, &progress);
    }
    const std::optional<MetricsSnapshot> after =
        before ? maybe_scrape(config, metrics_client, /*settle=*/true) : std::nullopt;
    if (before && after) run->server_metrics = histogram_deltas(*before, *after);
    const GoodputSlo slo = parse_goodput(config.goodput).value();  // validated with the configuration
    run->summary = summarize(run->load.records, run->load.duration_s, slo, run->load.client_cpu_s);
}

}  // namespace

Status run_bench_serve(BenchConfig config, std::ostream& out) {
    TERN_RETURN_IF_ERROR(validate(config));
    TERN_RETURN_IF_ERROR(check_metadata(config));
    std::vector<std::string> fits;
    TERN_RETURN_IF_ERROR(resolve_lengths(&config, &fits));
    config.workload.num_prompts = config.num_prompts;
    config.workload.seed = config.seed;
    TERN_ASSIGN_OR_RETURN(const net::BaseUrl base, net::parse_base_url(config.base_url));
    TERN_ASSIGN_OR_RETURN(const net::HttpClientOptions options, client_options(config));
    TERN_ASSIGN_OR_RETURN(const Workload workload, Workload::create(config.workload));
    std::string model = config.model;
    if (model.empty()) {
        TERN_ASSIGN_OR_RETURN(model, first_served_model(base, options));
    }
    const RequestTemplate request_template = make_template(config, model);
    const SenderFactory make_sender = [&]() -> std::unique_ptr<RequestSender> {
        return std::make_unique<HttpRequestSender>(base, options, request_template);
    };
    for (const std::string& fit : fits) std::cerr << fit << "\n";
    BenchResult result = make_result(config, model);
    result.runs = plan_runs(config);
    TERN_RETURN_IF_ERROR(warm_up(config, make_sender, result.runs.front()));
    int64_t total_completed = 0;
    const bool sweep = result.runs.size() > 1;
    for (RunPoint& run : result.runs) {
        std::cerr << fmt::format("tern bench serve: POST {}{} model {} | {}\n", base.origin(),
                                 base.join(config.endpoint), model, describe_run(config, run));
        measure_run(config, base, options, workload, make_sender, sweep, &run);
        total_completed += run.summary.completed;
        out << format_run_report(run, sweep ? fmt::format("Serving benchmark result: {}", run_label(run))
                                            : "Serving benchmark result")
            << "\n";
    }
    if (sweep) out << format_sweep_table(result.runs);
    TERN_RETURN_IF_ERROR(write_outputs(config, result, out));
    out.flush();
    if (total_completed == 0) {
        return Status(StatusCode::kUnavailable, "every request failed; see the errors in the report above");
    }
    return Status::ok();
}

Status run_bench_compare(const CompareCommand& command, std::ostream& out) {
    TERN_ASSIGN_OR_RETURN(std::vector<nlohmann::json> runs_a, load_runs(command.path_a));
    TERN_ASSIGN_OR_RETURN(std::vector<nlohmann::json> runs_b, load_runs(command.path_b));
    TERN_ASSIGN_OR_RETURN(std::vector<RunComparison> comparisons, compare_runs(runs_a, runs_b, command.options));
    out << fmt::format("# {} (A) vs {} (B)\n\n", command.path_a, command.path_b);
    out << format_comparison(comparisons, command.options);
    if (command.fail_on_regression && has_regression(comparisons)) {
        return Status(StatusCode::kInternal, "B is worse than A beyond noise (see the table)");
    }
    return Status::ok();
}

}  // namespace tern::bench
