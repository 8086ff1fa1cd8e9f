// Perplexity as llama-perplexity computes it: the text is cut into non-overlapping windows of `context` tokens,
// each window starts with BOS, and only the second half of each window is scored, so every scored token sees at
// least context/2 tokens of history.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/model.h"

namespace tern {

// Running mean of negative log-likelihoods; perplexity and its standard error as llama-perplexity reports them.
class NllStats {
public:
    void add(double nll) { sum_ += nll, sum_squares_ += nll * nll, ++count_; }
    int64_t count() const { return count_; }
    double mean() const { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }
    double perplexity() const;
    double perplexity_error() const;  // exp(mean) * standard error of the mean

private:
    double sum_ = 0.0;
    double sum_squares_ = 0.0;
    int64_t count_ = 0;
};

struct PerplexityResult {
    double perplexity = 0.0;
    double perplexity_error = 0.0;
    int64_t num_scored = 0;  // tokens whose probability was scored
    int64_t num_windows = 0;
    int64_t num_tokens = 0;  // tokens of the text (BOS included)
};

// One window's scored positions: logits row r predicts window token first + r + 1.
struct WindowScoring {
    int64_t first = 0;
    int64_t count = 0;
    std::vector<float> logits;  // count rows of vocab_size
};

// The windows of `num_tokens` tokens at `context` each: their start offsets (a trailing partial window is dropped).
std::vector<int64_t> window_starts(int64_t num_tokens, int64_t context);

// Runs one window (its first token replaced by `bos_id` when it is >= 0) and returns the scored positions' logits.
// `cache` holds at least `window.size()` positions of one slot.
Result<WindowScoring> score_window(Model& model, std::span<const int32_t> window, int32_t bos_id, KvCache* cache,
                                   ThreadPool* pool);

// log p(target) under softmax(logits), in double precision.
double log_probability(std::span<const float> logits, int32_t target);

Result<PerplexityResult> compute_perplexity(Model& model, std::span<const int32_t> tokens, int64_t context,
                                            int32_t bos_id, ThreadPool* pool);

// Checks that `tokens` fill at least one window of `context` and that context is usable.
Status check_eval_input(const Model& model, int64_t num_tokens, int64_t context);

}  // namespace tern
