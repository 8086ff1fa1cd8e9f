#include "plan/perf_model.h"

#include <cmath>

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

void PerfModel::ttft_terms(double concurrency, double input_tokens, double output_tokens, double* memory,
                           double* compute) const {
    const StepCost step = decode_step(concurrency, input_tokens + output_tokens / 2.0);
    const StepCost prompt = prefill(input_tokens);
    *memory = memory_s(step) + memory_s(prompt);
    *compute = compute_s(step) + compute_s(prompt);
}

void PerfModel::work_terms(double concurrency, double input_tokens, double output_tokens, double* memory,
                           double* compute) const {
    const StepCost step = decode_step(concurrency, input_tokens + output_tokens / 2.0);
    const StepCost prompt = prefill(input_tokens);
    *memory = output_tokens * memory_s(step) + concurrency * memory_s(prompt);
    *compute = output_tokens * compute_s(step) + concurrency * compute_s(prompt);
}

namespace {

struct Row {
    double memory = 0;  // memory part of the work, relative to the measured work
    double compute = 0;
};

// Scales both prior shares by one factor k (least squares on relative error).
Efficiency scale_prior(const std::vector<Row>& rows, const Efficiency& prior) {
    double dot = 0, norm = 0;
    for (const Row& row : rows) {
        const double predicted = row.memory / prior.bandwidth + row.compute / prior.compute;
        dot += predicted;
        norm += predicted * predicted;
    }
    const double slowdown = dot / norm;  // measured work = slowdown * predicted work
    return {prior.bandwidth / slowdown, prior.compute / slowdown};
}

}  // namespace

// A measured point gives one row from its throughput and, when it has a mean TTFT, one from that: TTFT is mostly
// the prompt's compute while throughput at low concurrency is mostly weight streaming, so one run with both
// separates the two efficiencies.
Calibration calibrate(const PerfModel& model, const std::vector<ProfilePoint>& points, const Efficiency& prior,
                      double input_tokens, double output_tokens) {
    Calibration result;
    std::vector<Row> rows;
    for (const ProfilePoint& point : points) {
        CalibrationCheck check;
        check.measured = point;
        check.input_tokens = point.input_tokens_mean.value_or(input_tokens);
        check.output_tokens = point.output_tokens_mean.value_or(output_tokens);
        const double measured_work = check.output_tokens * point.concurrency / point.output_tokens_per_s;
        Row row;
        model.work_terms(point.concurrency, check.input_tokens, check.output_tokens, &row.memory, &row.compute);
        rows.push_back({row.memory / measured_work, row.compute / measured_work});
        if (const std::optional<double> ttft_ms = point.ttft_ms.mean; ttft_ms && *ttft_ms > 0) {
            model.ttft_terms(point.concurrency, check.input_tokens, check.output_tokens, &row.memory, &row.compute);
            rows.push_back({row.memory / (*ttft_ms / 1000.0), row.compute / (*ttft_ms / 1000.0)});
        }
        result.checks.push_back(check);
    }
    // Weighted normal equations for u = 1/e_bw, v = 1/e_c in: 1 = u * memory + v * compute.
    double mm = 0, mc = 0, cc = 0, m1 = 0, c1 = 0;
    for (const Row& row : rows) {
        mm += row.memory * row.memory, mc += row.memory * row.compute, cc += row.compute * row.compute;
        m1 += row.memory, c1 += row.compute;
    }
    const double det = mm * cc - mc * mc;
    const bool separable = rows.size() >= 2 && det > 1e-9 * mm * cc;
    const double inv_bandwidth = separable ? (m1 * cc - c1 * mc) / det : 0;
    const double inv_compute = separable ? (c1 * mm - m1 * mc) / det : 0;
    if (separable && inv_bandwidth > 0 && inv_compute > 0) {
        result.efficiency = {1.0 / inv_bandwidth, 1.0 / inv_compute};
        result.method = points.size() == 1 ? "one measured point: both efficiencies from its throughput and TTFT"
                                           : "least squares over " + std::to_string(points.size()) + " measured points";
    } else {
        result.efficiency = scale_prior(rows, prior);
        result.method = points.size() == 1 ? "one measured point: both prior efficiencies scaled by one factor"
                                         : "points do not separate memory from compute time: both prior efficiencies "
                                           "scaled by one factor";
    }
    for (CalibrationCheck& check : result.checks) {
        check.predicted =
            model.at(check.measured.concurrency, check.input_tokens, check.output_tokens, result.efficiency);
    }
    return result;
}

}  // namespace tern::plan
