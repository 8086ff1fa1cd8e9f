#include "model/expert_rows.h"

#include <algorithm>

#include "base/check.h"

namespace tern {

void ExpertRows::reset(int64_t num_tokens, int64_t per_token) {
    experts_per_token = per_token;
    const auto size = static_cast<size_t>(num_tokens * per_token);
    token_experts.resize(size);
    token_weights.resize(size);
    token_rows.resize(size);
    row_tokens.resize(size);
}

void ExpertRows::choose(int64_t token, const int64_t* ranked, const float* weights) {
    int64_t* experts = token_experts.data() + token * experts_per_token;
    float* chosen_weights = token_weights.data() + token * experts_per_token;
    for (int64_t j = 0; j < experts_per_token; ++j) {  // insertion sort by id: a handful of experts
        int64_t slot = j;
        for (; slot > 0 && experts[slot - 1] > ranked[j]; --slot) {
            experts[slot] = experts[slot - 1];
            chosen_weights[slot] = chosen_weights[slot - 1];
        }
        experts[slot] = ranked[j];
        chosen_weights[slot] = weights[j];
    }
}

void ExpertRows::group_rows(int64_t num_tokens, int64_t num_experts) {
    std::vector<int64_t> next_row(static_cast<size_t>(num_experts), 0);
    for (int64_t idx = 0; idx < num_tokens * experts_per_token; ++idx) {
        const int64_t expert = token_experts[static_cast<size_t>(idx)];
        TERN_CHECK(expert >= 0 && expert < num_experts) << "expert " << expert << " out of range";
        ++next_row[static_cast<size_t>(expert)];
    }
    batches.clear();
    int64_t first_row = 0;
    for (int64_t expert = 0; expert < num_experts; ++expert) {
        const int64_t count = next_row[static_cast<size_t>(expert)];
        if (count > 0) batches.push_back({expert, first_row, count});
        next_row[static_cast<size_t>(expert)] = first_row;
        first_row += count;
    }
    for (int64_t token = 0; token < num_tokens; ++token) {
        for (int64_t j = 0; j < experts_per_token; ++j) {
            const auto idx = static_cast<size_t>(token * experts_per_token + j);
            const int64_t row = next_row[static_cast<size_t>(token_experts[idx])]++;
            token_rows[idx] = row;
            row_tokens[static_cast<size_t>(row)] = token;
        }
    }
}

size_t expert_wave_end(const std::vector<ExpertBatch>& batches, size_t begin, int64_t max_rows) {
    size_t end = begin + 1;
    int64_t rows = batches[begin].count;
    while (end < batches.size() && rows + batches[end].count <= max_rows) rows += batches[end++].count;
    return end;
}

}  // namespace tern
