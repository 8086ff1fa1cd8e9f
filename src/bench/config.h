// The configuration of `tern bench serve`, one field per flag, named after `vllm bench serve` where it has the same
// flag. Plain data plus validate(); the CLI fills it, run_bench_serve() consumes it.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/workload.h"

namespace tern::bench {

struct BenchConfig {
    // Target.
    std::string base_url = "http://127.0.0.1:8000";
    std::string endpoint = "/v1/completions";  // or /v1/chat/completions (any path ending in chat/completions)
    std::string model;                         // empty: the first model the server lists at /v1/models
    std::vector<std::string> headers;          // "KEY=VALUE", sent with every request

    // Load.
    int64_t num_prompts = 1000;
    double request_rate = std::numeric_limits<double>::infinity();
    double burstiness = 1.0;
    int64_t max_concurrency = 0;               // 0: no limit
    double duration_s = 0;                     // 0: until num_prompts requests were sent
    int64_t num_warmups = 0;                   // sent first and not counted
    uint64_t seed = 0;
    std::vector<int64_t> sweep_concurrency;    // one run per value (as --max-concurrency)
    std::vector<double> sweep_rate;            // one run per value (as --request-rate)

    // Workload (dataset, lengths, prefix, prompt kind). Length distributions given as percentile specs are fitted
    // into workload.input / workload.output by resolve_lengths().
    WorkloadOptions workload;
    std::string input_len_dist;                // "p50=800,p95=3000,p99=8000"
    std::string output_len_dist;

    // Request body.
    bool ignore_eos = false;
    std::optional<double> temperature;
    std::optional<double> top_p;
    std::optional<int64_t> top_k;
    std::string extra_body;                    // a JSON object merged into every request body

    // Timeouts, seconds.
    double connect_timeout_s = 10;
    double read_timeout_s = 300;
    double request_timeout_s = 3600;

    // Output.
    std::string label;                         // names the run in reports and the ledger
    std::vector<std::string> goodput;          // "ttft:MS", "tpot:MS", "e2el:MS"
    std::string save_result;                   // JSON file
    std::string ledger;                        // CSV file, one row appended per run
    std::string charts_dir;                    // SVG charts written here
    std::vector<std::string> metadata;         // "KEY=VALUE" saved in the result file
    bool server_metrics = false;               // read the server's /metrics histograms before and after each run
    bool progress = true;                      // progress bar on stderr
};

// Cross-field checks with messages that say which flag to change.
Status validate(const BenchConfig& config);

// Fits --input-len-dist / --output-len-dist (if given) into config->workload; records the fit in `fits` as
// human-readable lines ("input: log-normal mu=.. sigma=.., p50 800 -> 800").
Status resolve_lengths(BenchConfig* config, std::vector<std::string>* fits);

// Parses "1,2,4" (integers >= 1) and "0.5,1,inf" (rates > 0).
Result<std::vector<int64_t>> parse_int_list(std::string_view text, std::string_view flag);
Result<std::vector<double>> parse_rate_list(std::string_view text, std::string_view flag);
// A rate: a number > 0 or "inf".
Result<double> parse_rate(std::string_view text, std::string_view flag);

// "KEY=VALUE" -> {KEY, VALUE}.
Result<std::pair<std::string, std::string>> parse_key_value(std::string_view item, std::string_view flag);

// Every field, for the saved result.
nlohmann::json to_json(const BenchConfig& config);

}  // namespace tern::bench
