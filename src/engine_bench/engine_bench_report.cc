// `tern bench engine` output: a Markdown-friendly text summary and the --json object.
#include <fmt/format.h>

#include "engine_bench/engine_bench.h"

namespace tern::engine {
namespace {

nlohmann::json distribution_json(const bench::Distribution& distribution) {
    return {{"mean", distribution.mean}, {"p50", distribution.median}, {"p90", distribution.p90},
            {"p99", distribution.p99}, {"max", distribution.max}};
}

std::string distribution_row(std::string_view name, const bench::Distribution& distribution) {
    return fmt::format("| {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n", name, distribution.mean,
                       distribution.median, distribution.p90, distribution.p99, distribution.max);
}

double acceptance_rate(const EngineBenchResult& result) {
    return result.num_draft_tokens > 0 ? static_cast<double>(result.num_accepted_draft_tokens) / result.num_draft_tokens
                                       : 0.0;
}

// Tokens a verifying step gains per request: the accepted drafts and the one after them.
double mean_accepted_length(const EngineBenchResult& result) {
    return result.num_drafts > 0 ? 1.0 + static_cast<double>(result.num_accepted_draft_tokens) / result.num_drafts : 0.0;
}

}  // namespace

std::string format_engine_bench(const EngineBenchResult& result) {
    std::string text = result.capacity.describe() + "\n";
    text += fmt::format("requests: {} in {:.2f} s, {} prompt tokens, {} output tokens, {} steps, {} preemptions\n",
                        result.num_requests, result.duration_s, result.input_tokens, result.output_tokens,
                        result.num_steps, result.num_preemptions);
    text += fmt::format("throughput: {:.2f} requests/s, {:.1f} output tokens/s, {:.1f} total tokens/s\n",
                        result.requests_per_s, result.output_tokens_per_s, result.total_tokens_per_s);
    text += fmt::format("KV pool: peak {:.1f}% of token capacity held by live sequences, peak block usage {:.1f}%; "
                        "prefix cache hit rate {:.1f}%\n",
                        100.0 * result.peak_kv_fill, 100.0 * result.peak_kv_usage,
                        100.0 * result.prefix_cache_hit_rate);
    if (result.num_drafts > 0) {
        text += fmt::format("speculative decoding: {} drafts of {} tokens, {:.1f}% accepted, {:.2f} tokens a verifying "
                            "step\n", result.num_drafts, result.num_draft_tokens, 100.0 * acceptance_rate(result),
                            mean_accepted_length(result));
    }
    text += "| ms | mean | p50 | p90 | p99 | max |\n|---|---|---|---|---|---|\n";
    text += distribution_row("TTFT", result.ttft_ms);
    text += distribution_row("TPOT", result.tpot_ms);
    text += distribution_row("ITL", result.itl_ms);
    text += distribution_row("queue", result.queue_ms);
    text += distribution_row("E2E", result.e2e_ms);
    if (result.late_ttft_ms >= 0) {
        text += fmt::format("late prompt: TTFT {:.1f} ms; longest gap of the other streams after it arrived {:.1f} ms "
                            "({:.2f}x their median ITL)\n",
                            result.late_ttft_ms, result.late_max_gap_others_ms,
                            result.itl_ms.median > 0 ? result.late_max_gap_others_ms / result.itl_ms.median : 0.0);
    }
    return text;
}

nlohmann::json engine_bench_json(const EngineBenchResult& result) {
    nlohmann::json json = {
        {"duration_s", result.duration_s},
        {"num_requests", result.num_requests},
        {"input_tokens", result.input_tokens},
        {"output_tokens", result.output_tokens},
        {"requests_per_s", result.requests_per_s},
        {"output_tokens_per_s", result.output_tokens_per_s},
        {"total_tokens_per_s", result.total_tokens_per_s},
        {"ttft_ms", distribution_json(result.ttft_ms)},
        {"tpot_ms", distribution_json(result.tpot_ms)},
        {"itl_ms", distribution_json(result.itl_ms)},
        {"queue_ms", distribution_json(result.queue_ms)},
        {"e2e_ms", distribution_json(result.e2e_ms)},
        {"peak_kv_fill", result.peak_kv_fill},
        {"peak_kv_usage", result.peak_kv_usage},
        {"num_steps", result.num_steps},
        {"num_preemptions", result.num_preemptions},
        {"prefix_cache_hit_rate", result.prefix_cache_hit_rate},
        {"kv_tokens", result.capacity.kv_tokens},
        {"kv_bytes", result.capacity.kv_bytes},
        {"max_sequences_at_context", result.capacity.max_sequences_at_context},
    };
    if (result.num_drafts > 0) {
        json["speculative"] = {{"num_drafts", result.num_drafts},
                               {"num_draft_tokens", result.num_draft_tokens},
                               {"num_accepted_tokens", result.num_accepted_draft_tokens},
                               {"acceptance_rate", acceptance_rate(result)},
                               {"mean_accepted_length", mean_accepted_length(result)}};
    }
    if (result.late_ttft_ms >= 0) {
        json["late_prompt"] = {{"ttft_ms", result.late_ttft_ms}, {"max_gap_others_ms", result.late_max_gap_others_ms}};
    }
    return json;
}

}  // namespace tern::engine
