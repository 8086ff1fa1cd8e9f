#include "plan/perf_model.h"

#include <cmath>
#include <functional>

namespace tern::plan {

PerfModel::PerfModel(const ModelShape& shape, const WeightFootprint& weights, double kv_bytes_per_token,
                     double bandwidth, double peak_ops, int64_t batch_tokens)
    : matmul_bytes_(static_cast<double>(weights.matmul_bytes)),
      matmul_params_(static_cast<double>(weights.matmul_params)),
      kv_bytes_per_token_(kv_bytes_per_token),
      attention_ops_per_context_token_(4.0 * static_cast<double>(shape.num_layers * shape.num_heads * shape.head_dim)),
      bandwidth_(bandwidth),
      peak_ops_(peak_ops),
      batch_tokens_(static_cast<double>(batch_tokens)) {}

StepCost PerfModel::decode_step(double concurrency, double context_tokens) const {
    // The weights stream once per step whatever the batch; each sequence reads its own keys and values.
    StepCost cost;
    cost.bytes = matmul_bytes_ + concurrency * context_tokens * kv_bytes_per_token_;
    cost.ops = concurrency * (2.0 * matmul_params_ + attention_ops_per_context_token_ * context_tokens);
    return cost;
}

StepCost PerfModel::prefill(double input_tokens) const {
    // Causal attention over n tokens visits n^2/2 (query, key) pairs.
    StepCost cost;
    cost.bytes = std::ceil(input_tokens / batch_tokens_) * matmul_bytes_;
    cost.ops =
        2.0 * matmul_params_ * input_tokens + attention_ops_per_context_token_ * input_tokens * input_tokens / 2.0;
    return cost;
}

PerfPoint PerfModel::at(double concurrency, double input_tokens, double output_tokens,
                        const Efficiency& efficiency) const {
    PerfPoint point;
    point.concurrency = concurrency;
    point.step_s = seconds(decode_step(concurrency, input_tokens + output_tokens / 2.0), efficiency);
    point.prefill_s = seconds(prefill(input_tokens), efficiency);
    // Every step emits `concurrency` tokens; a request needs output_tokens of them, so concurrency/output_tokens
    // new prompts are prefilled per step on average.
    point.tpot_s = point.step_s + concurrency * point.prefill_s / output_tokens;
    point.ttft_s = point.prefill_s + point.step_s;
    point.output_tokens_per_s = concurrency / point.tpot_s;
    point.requests_per_s = point.output_tokens_per_s / output_tokens;
    return point;
}

double PerfModel::ttft_s(double concurrency, double prompt_tokens, double input_tokens, double output_tokens,
                         const Efficiency& efficiency) const {
    return seconds(prefill(prompt_tokens), efficiency) +
           seconds(decode_step(concurrency, input_tokens + output_tokens / 2.0), efficiency);
}

namespace {

// One measured figure: the model's value of it over the measured value, as times (so a throughput enters as its
// reciprocal). Scaling both efficiencies by k divides every ratio by k.
struct Row {
    std::function<double(const Efficiency&)> ratio;
};

double squared_error(const std::vector<Row>& rows, const Efficiency& efficiency, double prior_log_ratio) {
    double sum = 0;
    for (const Row& row : rows) sum += std::pow(row.ratio(efficiency) - 1.0, 2);
    // A whisper of the prior's bandwidth/compute ratio picks one answer where the rows leave a direction free (all
    // measured steps memory-bound, say) and is negligible where they do not.
    return sum + 1e-9 * std::pow(std::log(efficiency.bandwidth / efficiency.compute) - prior_log_ratio, 2);
}

// Both prior shares times one factor k, by least squares: ratio(k e) = ratio(e) / k.
Efficiency scale_prior(const std::vector<Row>& rows, const Efficiency& prior) {
    double sum = 0, sum_squares = 0;
    for (const Row& row : rows) {
        const double ratio = row.ratio(prior);
        sum += ratio;
        sum_squares += ratio * ratio;
    }
    const double factor = sum_squares / sum;
    return {prior.bandwidth * factor, prior.compute * factor};
}

// Both shares by a grid search in log space, refined around the best point: the step model's max() makes the
// fit nonlinear, and with a few rows a search is exact enough and cannot diverge.
Efficiency fit_both(const std::vector<Row>& rows, const Efficiency& prior) {
    const double prior_log_ratio = std::log(prior.bandwidth / prior.compute);
    double best_bw = std::log(prior.bandwidth), best_c = std::log(prior.compute);
    double best = squared_error(rows, prior, prior_log_ratio);
    double span = std::log(1e4);  // efficiencies from 1e-4 to 1e4 times the prior's
    constexpr int kSteps = 40;
    for (int pass = 0; pass < 6; ++pass) {
        const double center_bw = best_bw, center_c = best_c;
        for (int i = -kSteps; i <= kSteps; ++i) {
            for (int j = -kSteps; j <= kSteps; ++j) {
                const double log_bw = center_bw + span * i / kSteps, log_c = center_c + span * j / kSteps;
                const double error =
                    squared_error(rows, {std::exp(log_bw), std::exp(log_c)}, prior_log_ratio);
                if (error < best) best = error, best_bw = log_bw, best_c = log_c;
            }
        }
        span *= 2.5 / kSteps;
    }
    return {std::exp(best_bw), std::exp(best_c)};
}

}  // namespace

// Each measured point gives a row from its throughput and, at concurrency 1 with a mean TTFT, one from that: TTFT
// is then the prompt's compute while throughput is mostly weight streaming, so one such run separates the two
// efficiencies.
Calibration calibrate(const PerfModel& model, const std::vector<ProfilePoint>& points, const Efficiency& prior,
                      double input_tokens, double output_tokens) {
    Calibration result;
    std::vector<Row> rows;
    for (const ProfilePoint& point : points) {
        CalibrationCheck check;
        check.measured = point;
        check.input_tokens = point.input_tokens_mean.value_or(input_tokens);
        check.output_tokens = point.output_tokens_mean.value_or(output_tokens);
        const double concurrency = point.concurrency, in = check.input_tokens, out = check.output_tokens;
        const double measured_tpot_s = concurrency / point.output_tokens_per_s;
        rows.push_back({[&model, concurrency, in, out, measured_tpot_s](const Efficiency& efficiency) {
            return model.at(concurrency, in, out, efficiency).tpot_s / measured_tpot_s;
        }});
        // The model has no queueing, so only a point with one request in flight has a TTFT it can explain.
        const std::optional<double> ttft_ms = point.ttft_ms.mean;
        if (concurrency <= 1 && ttft_ms && *ttft_ms > 0) {
            const double measured_ttft_s = *ttft_ms / 1000.0;
            rows.push_back({[&model, concurrency, in, out, measured_ttft_s](const Efficiency& efficiency) {
                return model.ttft_s(concurrency, in, in, out, efficiency) / measured_ttft_s;
            }});
        }
        result.checks.push_back(check);
    }
    if (rows.size() >= 2) {
        result.efficiency = fit_both(rows, prior);
        result.method = points.size() == 1 ? "one measured point: both efficiencies from its throughput and TTFT"
                                           : "least squares over " + std::to_string(points.size()) + " measured points";
    } else {
        result.efficiency = scale_prior(rows, prior);
        result.method = "one measured point: both prior efficiencies scaled by one factor";
    }
    for (CalibrationCheck& check : result.checks) {
        check.predicted =
            model.at(check.measured.concurrency, check.input_tokens, check.output_tokens, result.efficiency);
    }
    return result;
}

}  // namespace tern::plan
