// Draft-model speculative decoding (vLLM's `draft_model` method): a cheaper model of the same vocabulary (a lower-bit
// quantization of the target, or a smaller model of its family) proposes the next K tokens greedily, one forward per
// token, and the target verifies them in one batched forward. Greedy drafts are one-hot, so the engine's rejection
// sampling keeps the target's distribution exactly whatever the draft model says; a poor draft model costs speed,
// never correctness.
//
// The draft model's KV lives in its own paged cache with the target's block count and block size, and is addressed
// by the target's block tables: the KV manager's bookkeeping (allocation, preemption) covers both. The draft model
// computes a sequence's tokens only when it drafts for it, catching up on what its cache lacks first (the caller
// tracks how far each sequence's draft KV goes), so a step without drafts (a large batch, a request whose drafts are
// paused) costs it nothing. It never relies on blocks the prefix cache shares: a sequence's draft KV is computed from
// its first token (rewriting a shared block's draft slots with the values they already hold).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace tern::spec {

// One sequence to draft for: its block table in the target's paged KV (one group), the tokens the draft model runs
// first (those of its known tokens the draft cache lacks, the last known token last) from `first_position` on, and
// how many drafts it takes (0: only run the tokens). The table must hold positions up to first_position +
// tokens.size() + num_drafts - 2 (a step that verifies the drafts allocated them).
struct DraftSequence {
    std::span<const int32_t> block_table;
    std::span<const int32_t> tokens;
    int32_t first_position = 0;
    int num_drafts = 0;
};

class DraftModel {
public:
    // `model` must have `vocab_size` tokens (the target's) and outlive this; the cache gets `num_blocks` blocks of
    // `block_size` positions of `type` (the target's, null block included).
    static Result<std::unique_ptr<DraftModel>> create(Model& model, int64_t vocab_size, int64_t num_blocks,
                                                      int64_t block_size, KvType type);

    // Each sequence's greedy drafts (num_drafts of them): the first forward runs every sequence's tokens, the last
    // giving draft 1; forward k > 0 runs draft k of each sequence that still drafts.
    Result<std::vector<std::vector<int32_t>>> propose(std::span<const DraftSequence> sequences, ThreadPool& pool);

    const Model& model() const { return model_; }

private:
    DraftModel(Model& model, std::unique_ptr<KvCache> cache) : model_(model), cache_(std::move(cache)) {}

    Model& model_;
    std::unique_ptr<KvCache> cache_;
    TokenBatch batch_;
    std::vector<float> logits_;
};

}  // namespace tern::spec
