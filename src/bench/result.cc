#include "bench/result.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

namespace tern::bench {
namespace {

using Json = nlohmann::json;

Json finite_or_inf(double value) { return std::isfinite(value) ? Json(value) : Json("inf"); }

void put_distribution(Json* out, const std::string& name, const Distribution& distribution) {
    (*out)["mean_" + name + "_ms"] = distribution.mean;
    (*out)["median_" + name + "_ms"] = distribution.median;
    (*out)["std_" + name + "_ms"] = distribution.std;
    (*out)["p90_" + name + "_ms"] = distribution.p90;
    (*out)["p95_" + name + "_ms"] = distribution.p95;
    (*out)["p99_" + name + "_ms"] = distribution.p99;
    (*out)["max_" + name + "_ms"] = distribution.max;
}

void put_summary(Json* out, const Summary& summary) {
    (*out)["duration"] = summary.duration_s;
    (*out)["completed"] = summary.completed;
    (*out)["failed"] = summary.failed;
    (*out)["stale_connection_retries"] = summary.stale_connection_retries;
    (*out)["total_input_tokens"] = summary.total_input_tokens;
    (*out)["total_output_tokens"] = summary.total_output_tokens;
    (*out)["request_throughput"] = summary.request_throughput;
    (*out)["request_goodput"] = summary.request_goodput ? Json(*summary.request_goodput) : Json();
    (*out)["output_throughput"] = summary.output_throughput;
    (*out)["total_token_throughput"] = summary.total_token_throughput;
    (*out)["max_output_tokens_per_s"] = summary.max_output_tokens_per_s;
    (*out)["max_concurrent_requests"] = summary.max_concurrent_requests;
    (*out)["mean_concurrency"] = summary.mean_concurrency;
    put_distribution(out, "ttft", summary.ttft_ms);
    put_distribution(out, "tpot", summary.tpot_ms);
    put_distribution(out, "itl", summary.itl_ms);
    put_distribution(out, "e2el", summary.e2el_ms);
    put_distribution(out, "client_queue_time", summary.queue_ms);
    (*out)["errors_by_kind"] = summary.errors_by_kind;
    (*out)["output_tokens_from_usage"] = summary.output_tokens_from_usage;
    (*out)["input_tokens_from_usage"] = summary.input_tokens_from_usage;
    (*out)["client_cpu_s"] = summary.client_cpu_s;
    (*out)["streamed_tokens_per_cpu_s"] = summary.streamed_tokens_per_cpu_s;
    (*out)["timeline"] = {{"bucket_s", summary.timeline.bucket_s},
                          {"concurrency", summary.timeline.concurrency},
                          {"output_tokens_per_s", summary.timeline.output_tokens_per_s}};
}

// Per-request arrays, index-aligned, in vLLM's names where vLLM has them (seconds, as vLLM stores them).
void put_requests(Json* out, const std::vector<RequestRecord>& records) {
    Json input_lens = Json::array(), output_lens = Json::array(), ttfts = Json::array(), itls = Json::array();
    Json latencies = Json::array(), start_times = Json::array(), arrival_times = Json::array();
    Json queue_times = Json::array(), errors = Json::array(), error_kinds = Json::array();
    Json statuses = Json::array(), finish_reasons = Json::array(), usage_counted = Json::array();
    Json requested = Json::array();
    for (const RequestRecord& record : records) {
        input_lens.push_back(record.input_tokens);
        output_lens.push_back(record.output_tokens);
        ttfts.push_back(record.ttft_s);
        itls.push_back(record.itl_s);
        latencies.push_back(record.e2el_s);
        start_times.push_back(record.start_s);
        arrival_times.push_back(record.arrival_s);
        queue_times.push_back(record.queue_s());
        errors.push_back(record.error);
        error_kinds.push_back(record.success ? "" : std::string(to_string(record.error_kind)));
        statuses.push_back(record.http_status);
        finish_reasons.push_back(record.finish_reason);
        usage_counted.push_back(record.output_tokens_from_usage);
        requested.push_back(record.requested_output_tokens);
    }
    (*out)["input_lens"] = std::move(input_lens);
    (*out)["output_lens"] = std::move(output_lens);
    (*out)["requested_output_lens"] = std::move(requested);
    (*out)["ttfts"] = std::move(ttfts);
    (*out)["itls"] = std::move(itls);
    (*out)["latencies"] = std::move(latencies);
    (*out)["start_times"] = std::move(start_times);
    (*out)["arrival_times"] = std::move(arrival_times);
    (*out)["queue_times"] = std::move(queue_times);
    (*out)["errors"] = std::move(errors);
    (*out)["error_kinds"] = std::move(error_kinds);
    (*out)["http_statuses"] = std::move(statuses);
    (*out)["finish_reasons"] = std::move(finish_reasons);
    (*out)["output_lens_from_usage"] = std::move(usage_counted);
}

}  // namespace

nlohmann::json run_to_json(const RunPoint& run) {
    Json out = Json::object();
    out["request_rate"] = finite_or_inf(run.request_rate);
    out["burstiness"] = finite_or_inf(run.burstiness);
    out["max_concurrency"] = run.max_concurrency > 0 ? Json(run.max_concurrency) : Json();
    out["num_client_threads"] = run.load.num_threads;
    put_summary(&out, run.summary);
    if (!run.server_metrics.is_null()) out["server_metrics"] = run.server_metrics;
    put_requests(&out, run.load.records);
    return out;
}

nlohmann::json to_json(const BenchResult& result) {
    Json runs = Json::array();
    for (const RunPoint& run : result.runs) runs.push_back(run_to_json(run));
    return {{"tern_bench_format", 1},   {"label", result.label},     {"date", result.date},
            {"git_commit", result.git_commit}, {"machine", result.machine}, {"config", result.config},
            {"metadata", result.metadata},     {"runs", std::move(runs)}};
}

Status save_result(const BenchResult& result, const std::string& path) {
    std::ofstream file(path);
    if (!file) return invalid_argument(fmt::format("cannot write the result file '{}'", path));
    file << to_json(result).dump(1) << "\n";
    if (!file) return invalid_argument(fmt::format("writing '{}' failed", path));
    return Status::ok();
}

Result<std::vector<nlohmann::json>> load_runs(const std::string& path) {
    std::ifstream file(path);
    if (!file) return not_found(fmt::format("cannot open '{}'", path));
    const Json value = Json::parse(file, nullptr, /*allow_exceptions=*/false);
    if (!value.is_object()) return invalid_argument(fmt::format("'{}' is not a JSON object", path));
    if (value.contains("runs")) {
        if (!value["runs"].is_array() || value["runs"].empty()) {
            return invalid_argument(fmt::format("'{}': \"runs\" must be a non-empty array", path));
        }
        return std::vector<Json>(value["runs"].begin(), value["runs"].end());
    }
    if (value.contains("request_throughput")) return std::vector<Json>{value};
    return invalid_argument(fmt::format("'{}' is neither a tern bench result nor a vLLM result", path));
}

}  // namespace tern::bench
