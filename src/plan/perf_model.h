// Throughput and latency of one model replica from bytes moved and operations done per step: each step's time
// is the longer of its memory time and its compute time, each at a share ("efficiency") of the peak. Calibration fits those two shares to a
// measured profile. Arithmetic only: nothing here runs a model.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "plan/model_shape.h"
#include "plan/profile.h"
#include "plan/weight_footprint.h"

namespace tern::plan {

struct Efficiency {
    double bandwidth = 0.7;  // share of peak memory bandwidth reached
    double compute = 0.5;    // share of peak matrix throughput reached
};

struct StepCost {
    double bytes = 0;  // bytes read from device memory
    double ops = 0;    // multiply-adds counted as 2 operations
};

// The steady state of `concurrency` requests of mean lengths under continuous batching.
struct PerfPoint {
    double concurrency = 0;
    double step_s = 0;     // one decode step of the whole batch
    double prefill_s = 0;  // the prompt of one mean-length request
    double tpot_s = 0;     // time per output token: a step plus the prompts interleaved per step
    double ttft_s = 0;     // the request's own prompt plus the running step it waits behind (no queueing)
    double output_tokens_per_s = 0;
    double requests_per_s = 0;
};

class PerfModel {
public:
    // `bandwidth` and `peak_ops` are the replica's totals (per-device figures times devices).
    PerfModel(const ModelShape& shape, const WeightFootprint& weights, double kv_bytes_per_token, double bandwidth,
              double peak_ops, int64_t batch_tokens);

    // Decode step of `concurrency` sequences whose context averages `context_tokens`.
    StepCost decode_step(double concurrency, double context_tokens) const;
    // Prefill of one prompt of `input_tokens`, in chunks of batch_tokens.
    StepCost prefill(double input_tokens) const;
    double memory_s(const StepCost& cost) const { return cost.bytes / bandwidth_; }  // at 100% of peak
    double compute_s(const StepCost& cost) const { return cost.ops / peak_ops_; }    // at 100% of peak
    // The roofline: weights and KV stream while the cores compute, so a step takes the longer of the two.
    double seconds(const StepCost& cost, const Efficiency& efficiency) const {
        return std::max(memory_s(cost) / efficiency.bandwidth, compute_s(cost) / efficiency.compute);
    }

    PerfPoint at(double concurrency, double input_tokens, double output_tokens, const Efficiency& efficiency) const;
    // TTFT of a prompt of `prompt_tokens` arriving while `concurrency` requests of the mean lengths decode.
    double ttft_s(double concurrency, double prompt_tokens, double input_tokens, double output_tokens,
                  const Efficiency& efficiency) const;

    double matmul_params() const { return matmul_params_; }
    double attention_ops_per_token_of_context() const { return attention_ops_per_context_token_; }

private:
    double matmul_bytes_;
    double matmul_params_;
    double kv_bytes_per_token_;
    double attention_ops_per_context_token_;  // 4 * layers * heads * head_dim per (query, key) pair
    double bandwidth_;
    double peak_ops_;
    double batch_tokens_;
};

struct CalibrationCheck {
    ProfilePoint measured;
    double input_tokens = 0;  // lengths the point was evaluated at
    double output_tokens = 0;
    PerfPoint predicted;  // with the calibrated efficiencies
};

struct Calibration {
    Efficiency efficiency;
    std::string method;
    std::vector<CalibrationCheck> checks;
};

// Fits the two efficiencies to the measured points' throughputs and, for points at concurrency 1, mean TTFTs
// (relative error, least squares). A single row (one point without a usable TTFT) scales both prior efficiencies
// by one factor instead.
// Points without their own lengths are evaluated at `input_tokens` / `output_tokens`.
Calibration calibrate(const PerfModel& model, const std::vector<ProfilePoint>& points, const Efficiency& prior,
                      double input_tokens, double output_tokens);

}  // namespace tern::plan
