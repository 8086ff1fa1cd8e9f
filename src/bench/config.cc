#include "bench/config.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "bench/length_dist.h"
#include "bench/metrics.h"

namespace tern::bench {
namespace {

std::vector<std::string_view> split_list(std::string_view text) {
    std::vector<std::string_view> items;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        std::string_view item = text.substr(start, comma - start);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (!item.empty()) items.push_back(item);
        start = comma + 1;
    }
    return items;
}

Status resolve_one(const std::string& spec, const char* name, LengthSpec* target, std::vector<std::string>* fits) {
    if (spec.empty()) return Status::ok();
    TERN_ASSIGN_OR_RETURN(std::vector<PercentilePoint> points, parse_percentile_spec(spec));
    Result<LogNormal> fit = fit_lognormal(points);
    if (!fit.is_ok()) return invalid_argument(fmt::format("--{}-len-dist: {}", name, fit.status().message()));
    *target = LengthSpec::fitted(fit.value());
    std::string line = fmt::format("{} lengths: log-normal mu={:.4f} sigma={:.4f};", name, fit.value().mu,
                                   fit.value().sigma);
    for (const PercentilePoint& point : points) {
        line += fmt::format(" p{:g} {:g} -> {:.0f}", point.percentile, point.value,
                            fit.value().quantile(point.percentile));
    }
    fits->push_back(std::move(line));
    return Status::ok();
}

}  // namespace

Status validate(const BenchConfig& config) {
    if (config.num_prompts < 1) return invalid_argument("--num-prompts must be >= 1");
    if (!(config.request_rate > 0)) return invalid_argument("--request-rate must be > 0 or inf");
    if (!(config.burstiness > 0)) return invalid_argument("--burstiness must be > 0");
    if (config.max_concurrency < 0) return invalid_argument("--max-concurrency must be >= 1");
    if (config.duration_s < 0) return invalid_argument("--duration must be >= 0 seconds");
    if (config.num_warmups < 0) return invalid_argument("--num-warmups must be >= 0");
    if (!config.sweep_concurrency.empty() && !config.sweep_rate.empty()) {
        return invalid_argument("give --sweep-concurrency or --sweep-rate, not both");
    }
    if (!config.sweep_concurrency.empty() && config.max_concurrency > 0) {
        return invalid_argument("--sweep-concurrency sets the concurrency of each run; drop --max-concurrency");
    }
    for (double timeout : {config.connect_timeout_s, config.read_timeout_s, config.request_timeout_s}) {
        if (!(timeout > 0)) return invalid_argument("timeouts must be > 0 seconds");
    }
    if (config.workload.prompt_kind == PromptKind::kTokenIds && config.endpoint.find("chat") != std::string::npos) {
        return invalid_argument("--prompt-kind token-ids works only with /v1/completions (chat takes text)");
    }
    TERN_RETURN_IF_ERROR(parse_goodput(config.goodput).status());
    if (!config.extra_body.empty()) {
        const auto body = nlohmann::json::parse(config.extra_body, nullptr, /*allow_exceptions=*/false);
        if (!body.is_object()) return invalid_argument("--extra-body must be a JSON object");
    }
    return Status::ok();
}

Status resolve_lengths(BenchConfig* config, std::vector<std::string>* fits) {
    TERN_RETURN_IF_ERROR(resolve_one(config->input_len_dist, "input", &config->workload.input, fits));
    TERN_RETURN_IF_ERROR(resolve_one(config->output_len_dist, "output", &config->workload.output, fits));
    return Status::ok();
}

Result<double> parse_rate(std::string_view text, std::string_view flag) {
    if (text == "inf" || text == "Inf" || text == "INF") return std::numeric_limits<double>::infinity();
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || !(value > 0) || !std::isfinite(value)) {
        return invalid_argument(fmt::format("{}: '{}' is not a rate (a number > 0 or inf)", flag, text));
    }
    return value;
}

Result<std::vector<int64_t>> parse_int_list(std::string_view text, std::string_view flag) {
    std::vector<int64_t> values;
    for (std::string_view item : split_list(text)) {
        int64_t value = 0;
        const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
        if (error != std::errc() || end != item.data() + item.size() || value < 1) {
            return invalid_argument(fmt::format("{}: '{}' is not an integer >= 1", flag, item));
        }
        values.push_back(value);
    }
    if (values.empty()) return invalid_argument(fmt::format("{}: give a comma-separated list, e.g. 1,2,4,8", flag));
    return values;
}

Result<std::vector<double>> parse_rate_list(std::string_view text, std::string_view flag) {
    std::vector<double> values;
    for (std::string_view item : split_list(text)) {
        TERN_ASSIGN_OR_RETURN(double value, parse_rate(item, flag));
        values.push_back(value);
    }
    if (values.empty()) return invalid_argument(fmt::format("{}: give a comma-separated list, e.g. 1,2,4", flag));
    return values;
}

Result<std::pair<std::string, std::string>> parse_key_value(std::string_view item, std::string_view flag) {
    const size_t equals = item.find('=');
    if (equals == std::string_view::npos || equals == 0) {
        return invalid_argument(fmt::format("{} '{}': expected KEY=VALUE", flag, item));
    }
    return std::pair{std::string(item.substr(0, equals)), std::string(item.substr(equals + 1))};
}

nlohmann::json to_json(const BenchConfig& config) {
    using Json = nlohmann::json;
    auto rate = [](double value) { return std::isfinite(value) ? Json(value) : Json("inf"); };
    auto optional = [](const auto& value) { return value ? Json(*value) : Json(); };
    Json sweep_rate = Json::array();
    for (double value : config.sweep_rate) sweep_rate.push_back(rate(value));
    const WorkloadOptions& workload = config.workload;
    return {
        {"base_url", config.base_url},
        {"endpoint", config.endpoint},
        {"model", config.model},
        {"num_prompts", config.num_prompts},
        {"request_rate", rate(config.request_rate)},
        {"burstiness", rate(config.burstiness)},
        {"max_concurrency", config.max_concurrency > 0 ? Json(config.max_concurrency) : Json()},
        {"duration", config.duration_s},
        {"num_warmups", config.num_warmups},
        {"seed", config.seed},
        {"sweep_concurrency", config.sweep_concurrency},
        {"sweep_rate", sweep_rate},
        {"dataset_name", workload.dataset_name},
        {"dataset_path", workload.dataset_path},
        {"input_len", workload.input.length},
        {"output_len", workload.output.length},
        {"range_ratio", workload.input.range_ratio},
        {"prefix_len", workload.prefix_len},
        {"input_len_dist", config.input_len_dist},
        {"output_len_dist", config.output_len_dist},
        {"lengths_file", workload.lengths_file},
        {"prompt_kind", workload.prompt_kind == PromptKind::kText ? "text" : "token-ids"},
        {"vocab_size", workload.vocab_size},
        {"ignore_eos", config.ignore_eos},
        {"temperature", optional(config.temperature)},
        {"top_p", optional(config.top_p)},
        {"top_k", optional(config.top_k)},
        {"extra_body", config.extra_body.empty() ? Json() : Json::parse(config.extra_body, nullptr, false)},
        {"connect_timeout", config.connect_timeout_s},
        {"read_timeout", config.read_timeout_s},
        {"request_timeout", config.request_timeout_s},
        {"label", config.label},
        {"goodput", config.goodput},
        {"server_metrics", config.server_metrics},
    };
}

}  // namespace tern::bench
