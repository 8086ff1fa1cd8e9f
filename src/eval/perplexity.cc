#include "eval/perplexity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tern {

double NllStats::perplexity() const {
    return std::exp(mean());
}

double NllStats::perplexity_error() const {
    if (count_ < 2) return 0.0;
    const double mean_value = mean();
    const double variance = sum_squares_ / static_cast<double>(count_) - mean_value * mean_value;
    return variance > 0.0 ? perplexity() * std::sqrt(variance / static_cast<double>(count_ - 1)) : 0.0;
}

std::vector<int64_t> window_starts(int64_t num_tokens, int64_t context) {
    std::vector<int64_t> starts;
    for (int64_t start = 0; start + context <= num_tokens; start += context) starts.push_back(start);
    return starts;
}

Result<WindowScoring> score_window(Model& model, std::span<const int32_t> window, int32_t bos_id, KvCache* cache,
                                   ThreadPool* pool) {
    const int64_t length = static_cast<int64_t>(window.size());
    WindowScoring scoring;
    scoring.first = length / 2;
    scoring.count = length - 1 - scoring.first;
    TokenBatch batch;
    for (int64_t pos = 0; pos < length; ++pos) {
        const int32_t token = pos == 0 && bos_id >= 0 ? bos_id : window[static_cast<size_t>(pos)];
        batch.add(token, static_cast<int32_t>(pos), 0, pos >= scoring.first && pos < length - 1);
    }
    TERN_RETURN_IF_ERROR(model.forward(batch, cache, pool, &scoring.logits));
    return scoring;
}

double log_probability(std::span<const float> logits, int32_t target) {
    const float max_logit = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float logit : logits) sum += std::exp(static_cast<double>(logit) - max_logit);
    return static_cast<double>(logits[static_cast<size_t>(target)]) - max_logit - std::log(sum);
}

Status check_eval_input(const Model& model, int64_t num_tokens, int64_t context) {
    if (context < 4) return invalid_argument(fmt::format("--ctx {} is too small; use at least 4", context));
    if (context > model.hparams().context_length) {
        return invalid_argument(
            fmt::format("--ctx {} exceeds the model's context length {}", context, model.hparams().context_length));
    }
    if (num_tokens < context) {
        return invalid_argument(
            fmt::format("the text has {} tokens, fewer than one window of --ctx {}; give a longer "
                        "text or a smaller --ctx",
                        num_tokens, context));
    }
    return Status::ok();
}

Result<PerplexityResult> compute_perplexity(Model& model, std::span<const int32_t> tokens, int64_t context,
                                            int32_t bos_id, ThreadPool* pool) {
    const int64_t num_tokens = static_cast<int64_t>(tokens.size());
    TERN_RETURN_IF_ERROR(check_eval_input(model, num_tokens, context));
    const int64_t vocab_size = model.hparams().vocab_size;
    KvCache cache(model.hparams(), 1, context);
    NllStats stats;
    const std::vector<int64_t> starts = window_starts(num_tokens, context);
    for (int64_t start : starts) {
        const std::span<const int32_t> window =
            tokens.subspan(static_cast<size_t>(start), static_cast<size_t>(context));
        TERN_ASSIGN_OR_RETURN(WindowScoring scoring, score_window(model, window, bos_id, &cache, pool));
        for (int64_t row = 0; row < scoring.count; ++row) {
            const std::span<const float> logits(scoring.logits.data() + row * vocab_size,
                                                static_cast<size_t>(vocab_size));
            stats.add(-log_probability(logits, window[static_cast<size_t>(scoring.first + row + 1)]));
        }
    }
    return PerplexityResult{stats.perplexity(), stats.perplexity_error(), stats.count(),
                            static_cast<int64_t>(starts.size()), num_tokens};
}

}  // namespace tern
