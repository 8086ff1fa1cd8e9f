// A mixture-of-experts step's bookkeeping, without tensors: which gathered row holds each (token, chosen expert),
// the rows grouped by expert (an expert's matrices then run once over all of its rows), and the waves of experts
// that one pass over the workspace's rows can hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tern {

// One expert's consecutive rows: the tokens that chose it, in token order.
struct ExpertBatch {
    int64_t expert;
    int64_t first_row;
    int64_t count;
};

struct ExpertRows {
    int64_t experts_per_token = 0;
    std::vector<int64_t> token_experts;  // [token * experts_per_token + j]: its chosen experts, in id order
    std::vector<float> token_weights;    // [token * experts_per_token + j]: the weight of that expert's output
    std::vector<int64_t> token_rows;     // [token * experts_per_token + j]: the row that expert computes for it
    std::vector<int64_t> row_tokens;     // [row]: the token a row belongs to
    std::vector<ExpertBatch> batches;    // the experts chosen at least once, in id order, their rows laid end to end

    // Sizes the choice lists for num_tokens tokens choosing experts_per_token experts each.
    void reset(int64_t num_tokens, int64_t experts_per_token);
    // Puts token's chosen experts (the first experts_per_token of `ranked`, best first) in id order with their
    // weights; called for every token before group_rows.
    void choose(int64_t token, const int64_t* ranked, const float* weights);
    // Numbers the rows: every expert's tokens consecutive, experts in id order.
    void group_rows(int64_t num_tokens, int64_t num_experts);
    int64_t num_rows() const { return static_cast<int64_t>(row_tokens.size()); }
};

// The end of the wave of batches starting at `begin`: as many as fit max_rows rows, and at least one.
size_t expert_wave_end(const std::vector<ExpertBatch>& batches, size_t begin, int64_t max_rows);

}  // namespace tern
