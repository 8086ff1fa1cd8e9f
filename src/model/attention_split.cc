#include "model/attention_split.h"

namespace tern {
namespace {

// Per token beyond its keys: the query's transposition, the softmax state, the output row.
constexpr int64_t kTokenOverhead = 32;

}  // namespace

void AttentionSplit::group_runs(const std::vector<int32_t>& positions, const std::vector<int32_t>& slots) {
    runs_.clear();
    for (size_t token_idx = 0; token_idx < positions.size(); ++token_idx) {
        if (!runs_.empty()) {
            QueryRun& run = runs_.back();
            const size_t last = static_cast<size_t>(run.first_token + run.num_tokens - 1);
            if (run.num_tokens < kQueriesPerRun && slots[last] == slots[token_idx] &&
                positions[last] + 1 == positions[token_idx]) {
                ++run.num_tokens;
                continue;
            }
        }
        runs_.push_back({static_cast<int64_t>(token_idx), 1});
    }
}

void AttentionSplit::build(const std::vector<int32_t>& positions, const std::vector<int32_t>& slots,
                           int64_t kv_heads, int num_parts) {
    group_runs(positions, slots);
    run_costs_.clear();
    int64_t total = 0;
    for (const QueryRun& run : runs_) {
        int64_t cost = 0;
        for (int64_t token = run.first_token; token < run.first_token + run.num_tokens; ++token) {
            cost += positions[static_cast<size_t>(token)] + 1 + kTokenOverhead;
        }
        run_costs_.push_back(cost);
        total += cost * kv_heads;
    }
    part_begins_.assign(1, 0);
    int64_t done = 0, unit = 0;
    for (int part = 1; part < num_parts; ++part) {
        const int64_t target = total * part / num_parts;
        while (done < target) done += run_costs_[static_cast<size_t>(unit++ / kv_heads)];
        part_begins_.push_back(unit);
    }
    part_begins_.push_back(static_cast<int64_t>(runs_.size()) * kv_heads);
}

}  // namespace tern
