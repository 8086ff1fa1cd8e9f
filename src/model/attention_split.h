// How one forward pass's attention is shared among threads. A work unit is a run of up to kQueriesPerRun
// consecutive tokens of one sequence (consecutive positions: a prefill chunk's queries share each key tile,
// kernels::AttentionQueries) times one KV head; unit = run * kv_heads + head. The units are cut into parts that
// each read about as many cached keys (the model cuts 8 per thread and hands them out as threads come free): in a
// causal prefill the later tokens attend to more positions, and an even split by count leaves the threads with the
// early tokens waiting (2 threads: a quarter and three quarters of the work).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tern {

struct QueryRun {
    int64_t first_token;
    int64_t num_tokens;
};

class AttentionSplit {
public:
    static constexpr int64_t kQueriesPerRun = 4;  // what attention_queries serves at once (4 queries of 4 heads)

    // Regroups the batch (its tokens' positions and sequences) for `kv_heads` heads into `num_parts` parts; the
    // buffers are reused from one call to the next.
    void build(const std::vector<int32_t>& positions, const std::vector<int32_t>& slots, int64_t kv_heads,
               int num_parts);

    const std::vector<QueryRun>& runs() const { return runs_; }
    int64_t num_parts() const { return static_cast<int64_t>(part_begins_.size()) - 1; }
    // Part p is units [part_begin(p), part_begin(p + 1)).
    int64_t part_begin(int64_t part) const { return part_begins_[static_cast<size_t>(part)]; }

private:
    void group_runs(const std::vector<int32_t>& positions, const std::vector<int32_t>& slots);

    std::vector<QueryRun> runs_;
    std::vector<int64_t> run_costs_;
    std::vector<int64_t> part_begins_;
};

}  // namespace tern
