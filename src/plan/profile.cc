#include "plan/profile.h"

#include "formats/strict_json.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tern::plan {
namespace {

using nlohmann::json;

// The first of `keys` present in `object` as a number.
std::optional<double> number_at(const json& object, std::initializer_list<const char*> keys) {
    for (const char* key : keys) {
        const auto found = object.find(key);
        if (found != object.end() && found->is_number()) return found->get<double>();
    }
    return std::nullopt;
}

Status read_latency(const json& result, const char* name, const std::string& where, LatencySummary* out) {
    const auto found = result.find(name);
    if (found != result.end() && found->is_number()) {
        out->mean = found->get<double>();
    } else if (found != result.end() && found->is_object()) {
        out->mean = number_at(*found, {"mean"});
        out->p50 = number_at(*found, {"p50", "median"});
        out->p90 = number_at(*found, {"p90"});
        out->p95 = number_at(*found, {"p95"});
        out->p99 = number_at(*found, {"p99"});
    } else if (found != result.end() && !found->is_null()) {
        return invalid_argument(
            fmt::format("{}: \"{}\" must be a number of milliseconds or an object of percentiles", where, name));
    }
    const std::string metric = std::string(name).substr(0, 4);  // "ttft" or "tpot"
    if (!out->mean) out->mean = number_at(result, {("mean_" + metric + "_ms").c_str()});
    if (!out->p50) out->p50 = number_at(result, {("median_" + metric + "_ms").c_str()});
    if (!out->p99) out->p99 = number_at(result, {("p99_" + metric + "_ms").c_str()});
    for (const std::optional<double>& value : {out->mean, out->p50, out->p90, out->p95, out->p99}) {
        if (value && *value < 0) return invalid_argument(fmt::format("{}: \"{}\" has a negative time", where, name));
    }
    return Status::ok();
}

// Mean lengths of the run, given directly or as totals over the completed requests.
std::optional<double> mean_tokens(const json& result, const char* mean_key, const char* total_key) {
    if (std::optional<double> mean = number_at(result, {mean_key})) return mean;
    const std::optional<double> total = number_at(result, {total_key});
    const std::optional<double> completed = number_at(result, {"completed"});
    if (total && completed && *completed > 0) return *total / *completed;
    return std::nullopt;
}

Result<ProfilePoint> parse_point(const json& result, const std::string& where) {
    if (!result.is_object()) return invalid_argument(where + ": a profile result must be a JSON object");
    ProfilePoint point;
    const std::optional<double> concurrency = number_at(result, {"concurrency", "max_concurrency"});
    const std::optional<double> throughput = number_at(result, {"output_tokens_per_s", "output_throughput"});
    if (!concurrency || *concurrency <= 0) {
        return invalid_argument(where + ": needs \"concurrency\" (requests in flight, a positive number)");
    }
    if (!throughput || *throughput <= 0) {
        return invalid_argument(where + ": needs \"output_tokens_per_s\" (a positive number)");
    }
    point.concurrency = *concurrency;
    point.output_tokens_per_s = *throughput;
    TERN_RETURN_IF_ERROR(read_latency(result, "ttft_ms", where, &point.ttft_ms));
    TERN_RETURN_IF_ERROR(read_latency(result, "tpot_ms", where, &point.tpot_ms));
    point.input_tokens_mean = mean_tokens(result, "input_tokens_mean", "total_input_tokens");
    point.output_tokens_mean = mean_tokens(result, "output_tokens_mean", "total_output_tokens");
    if (point.output_tokens_mean && *point.output_tokens_mean <= 0) {
        return invalid_argument(where + ": \"output_tokens_mean\" must be positive");
    }
    if (point.input_tokens_mean && *point.input_tokens_mean < 0) {
        return invalid_argument(where + ": \"input_tokens_mean\" must not be negative");
    }
    return point;
}

}  // namespace

Result<std::vector<ProfilePoint>> parse_profile(const std::string& text, const std::string& label) {
    TERN_ASSIGN_OR_RETURN(json root, parse_strict_json(text, label));  // a repeated key is an error
    const json* results = &root;
    for (const char* key : {"results", "runs"}) {
        if (root.is_object() && root.contains(key) && root[key].is_array()) results = &root[key];
    }
    std::vector<ProfilePoint> points;
    if (results->is_array()) {
        for (size_t idx = 0; idx < results->size(); ++idx) {
            TERN_ASSIGN_OR_RETURN(ProfilePoint point,
                                  parse_point((*results)[idx], fmt::format("{}: result {}", label, idx)));
            points.push_back(point);
        }
    } else {
        TERN_ASSIGN_OR_RETURN(ProfilePoint point, parse_point(*results, label));
        points.push_back(point);
    }
    if (points.empty()) return invalid_argument(label + ": the profile holds no results");
    return points;
}

Result<std::vector<ProfilePoint>> read_profile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return not_found(fmt::format("{}: cannot open the profile", path));
    std::stringstream buffer;
    buffer << in.rdbuf();
    return parse_profile(buffer.str(), path);
}

}  // namespace tern::plan
