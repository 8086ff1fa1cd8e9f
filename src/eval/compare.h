// A/B comparison of a base model and its quantized copy on the same text: both perplexities, the KL divergence
// of the quantized next-token distribution from the base one at every scored token, top-1 agreement and decode
// speed. Both models score the same windows in lockstep, so no logits are kept beyond one window.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "eval/perplexity.h"
#include "model/model.h"

namespace tern {

struct CompareResult {
    PerplexityResult base;
    PerplexityResult quant;
    double kld_mean = 0.0;
    double kld_p99 = 0.0;
    double top1_agreement = 0.0;  // share of scored tokens where both models' most likely next token agree
    int64_t num_scored = 0;
};

// KL(P || Q) in nats for P = softmax(base_logits), Q = softmax(quant_logits).
double kl_divergence(std::span<const float> base_logits, std::span<const float> quant_logits);

Result<CompareResult> compare_models(Model& base, Model& quant, std::span<const int32_t> tokens, int64_t context,
                                     int32_t bos_id, ThreadPool* pool);

// Single-token decode steps over the first 65 of `tokens` (teacher-forced, one sequence), timed after one warm-up
// step: tokens/s.
Result<double> measure_decode_speed(Model& model, std::span<const int32_t> tokens, ThreadPool* pool);

}  // namespace tern
