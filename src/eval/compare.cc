#include "eval/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace tern {
namespace {

std::vector<double> log_softmax(std::span<const float> logits) {
    const float max_logit = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float logit : logits) sum += std::exp(static_cast<double>(logit) - max_logit);
    const double log_sum = std::log(sum) + max_logit;
    std::vector<double> out(logits.size());
    for (size_t idx = 0; idx < logits.size(); ++idx) out[idx] = static_cast<double>(logits[idx]) - log_sum;
    return out;
}

int64_t argmax(std::span<const float> logits) {
    return std::max_element(logits.begin(), logits.end()) - logits.begin();
}

double percentile(std::vector<double> values, double fraction) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    const double rank = fraction * static_cast<double>(values.size() - 1);
    const size_t lower = static_cast<size_t>(rank);
    const size_t upper = std::min(lower + 1, values.size() - 1);
    return values[lower] + (values[upper] - values[lower]) * (rank - static_cast<double>(lower));
}

}  // namespace

double kl_divergence(std::span<const float> base_logits, std::span<const float> quant_logits) {
    const std::vector<double> log_p = log_softmax(base_logits);
    const std::vector<double> log_q = log_softmax(quant_logits);
    double kld = 0.0;
    for (size_t idx = 0; idx < log_p.size(); ++idx) kld += std::exp(log_p[idx]) * (log_p[idx] - log_q[idx]);
    return std::max(kld, 0.0);
}

Result<CompareResult> compare_models(Model& base, Model& quant, std::span<const int32_t> tokens, int64_t context,
                                     int32_t bos_id, ThreadPool* pool) {
    const int64_t num_tokens = static_cast<int64_t>(tokens.size());
    TERN_RETURN_IF_ERROR(check_eval_input(base, num_tokens, context));
    TERN_RETURN_IF_ERROR(check_eval_input(quant, num_tokens, context));
    const int64_t vocab_size = base.hparams().vocab_size;
    if (quant.hparams().vocab_size != vocab_size) {
        return invalid_argument(
            fmt::format("the models' vocabularies differ ({} vs {} tokens)", vocab_size, quant.hparams().vocab_size));
    }
    KvCache base_cache(base.hparams(), 1, context);
    KvCache quant_cache(quant.hparams(), 1, context);
    NllStats base_stats;
    NllStats quant_stats;
    std::vector<double> klds;
    int64_t agreements = 0;
    const std::vector<int64_t> starts = window_starts(num_tokens, context);
    for (int64_t start : starts) {
        const auto window = tokens.subspan(static_cast<size_t>(start), static_cast<size_t>(context));
        TERN_ASSIGN_OR_RETURN(WindowScoring base_scoring, score_window(base, window, bos_id, &base_cache, pool));
        TERN_ASSIGN_OR_RETURN(WindowScoring quant_scoring, score_window(quant, window, bos_id, &quant_cache, pool));
        for (int64_t row = 0; row < base_scoring.count; ++row) {
            const std::span<const float> p(base_scoring.logits.data() + row * vocab_size,
                                           static_cast<size_t>(vocab_size));
            const std::span<const float> q(quant_scoring.logits.data() + row * vocab_size,
                                           static_cast<size_t>(vocab_size));
            const int32_t target = window[static_cast<size_t>(base_scoring.first + row + 1)];
            base_stats.add(-log_probability(p, target));
            quant_stats.add(-log_probability(q, target));
            klds.push_back(kl_divergence(p, q));
            agreements += argmax(p) == argmax(q) ? 1 : 0;
        }
    }
    CompareResult result;
    const auto summarize = [&](const NllStats& stats) {
        return PerplexityResult{stats.perplexity(), stats.perplexity_error(), stats.count(),
                                static_cast<int64_t>(starts.size()), num_tokens};
    };
    result.base = summarize(base_stats);
    result.quant = summarize(quant_stats);
    result.num_scored = static_cast<int64_t>(klds.size());
    double kld_sum = 0.0;
    for (double kld : klds) kld_sum += kld;
    result.kld_mean = klds.empty() ? 0.0 : kld_sum / static_cast<double>(klds.size());
    result.kld_p99 = percentile(std::move(klds), 0.99);
    result.top1_agreement =
        result.num_scored == 0 ? 0.0 : static_cast<double>(agreements) / static_cast<double>(result.num_scored);
    return result;
}

Result<double> measure_decode_speed(Model& model, std::span<const int32_t> tokens, ThreadPool* pool) {
    // 64 steps time decode well enough; the whole text would take minutes on a 1B model in F16.
    constexpr int64_t kMaxSteps = 65;
    const int64_t num_steps =
        std::min({static_cast<int64_t>(tokens.size()), model.hparams().context_length, kMaxSteps});
    if (num_steps < 2) return invalid_argument("decode speed needs at least 2 tokens");
    KvCache cache(model.hparams(), 1, num_steps);
    TokenBatch batch;
    std::vector<float> logits;
    std::chrono::steady_clock::time_point begin;
    for (int64_t step = 0; step < num_steps; ++step) {
        if (step == 1) begin = std::chrono::steady_clock::now();  // step 0 sizes the workspace
        batch.clear();
        batch.add(tokens[static_cast<size_t>(step)], static_cast<int32_t>(step), 0, true);
        TERN_RETURN_IF_ERROR(model.forward(batch, &cache, pool, &logits));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    return static_cast<double>(num_steps - 1) / std::max(seconds, 1e-9);
}

}  // namespace tern
