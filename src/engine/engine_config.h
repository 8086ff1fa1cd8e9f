// The serving engine's settings: KV cache size and type, prefix caching, and the scheduler's limits, with the
// capacity they give for a model (what `tern serve` and `tern bench engine` print at start).
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <string_view>

#include "base/status.h"
#include "model/hparams.h"
#include "model/kv_cache.h"
#include "scheduler/scheduler.h"
#include "spec/ngram_proposer.h"

namespace tern::engine {

// How waiting and running requests are ordered (vLLM's --scheduling-policy). Under kFcfs (the default, as in vLLM)
// arrival order alone decides and a request with a non-zero priority is refused: a client must not be able to jump
// the queue or preempt others by asking. Under kPriority a lower `priority` goes first and may preempt.
enum class SchedulingPolicy { kFcfs, kPriority };

// "fcfs" or "priority"; anything else is kInvalidArgument naming --scheduling-policy.
Result<SchedulingPolicy> parse_scheduling_policy(std::string_view name);

// Speculative decoding (src/spec): each decoding request's drafts are computed and verified, K at a time, in the
// batched forward of the next step; exact (greedy outputs unchanged, sampled ones distributed as without it). Off by
// default. Requests with a grammar run without drafts (their masks are filled before the forward, one per request).
enum class DraftMethod {
    kNgram,       // prompt lookup (spec/ngram_proposer.h)
    kDraftModel,  // a cheaper model of the same vocabulary (spec/draft_model.h), given to Engine::create
};

struct SpeculativeConfig {
    int num_speculative_tokens = 0;  // K drafts per request and step; 0: off
    DraftMethod method = DraftMethod::kNgram;
    spec::NgramOptions ngram;        // prompt lookup's lengths (num_tokens is set from K)
    // No drafts while more requests run than this: the step is then compute-bound, and rejected drafts cost as much
    // as real tokens (vLLM's speculative_disable_by_batch_size).
    int disable_by_batch_size = 8;
    // A request whose last verifying steps gave fewer tokens than this on average pauses its drafting for a while.
    // 0: break-even with a margin, from the measured cost of a verifying step (engine_draft.cc).
    double min_tokens_per_verification = 0.0;
};

struct EngineConfig {
    uint64_t kv_cache_bytes = 0;          // KV budget; 0 = kDefaultKvMemoryFraction of available memory
    KvType kv_type = KvType::kF16;
    int block_size = 16;                  // tokens per KV block
    bool enable_prefix_caching = true;
    // Sliding-window layers hold only their window's KV blocks (model/kv_groups.h); off: every layer keeps every
    // position, as before, in one block table per sequence (attention still stops at the window).
    bool hybrid_kv_cache = true;
    int max_batched_tokens = 2048;        // tokens computed per step, all requests together
    int max_running = 256;                // sequences in one step
    int max_queued_requests = 1024;       // waiting requests beyond which add_request() rejects
    int64_t max_queued_tokens = 1 << 20;  // prompt tokens of waiting requests beyond which add_request() rejects
    int max_model_len = 0;                // context length; 0 = the model's own (trained) context
    SchedulingPolicy scheduling_policy = SchedulingPolicy::kFcfs;
    SpeculativeConfig speculative;

    Status validate() const;
};

// As vLLM's gpu_memory_utilization does for GPU memory: the share of the memory available at start that the KV
// cache takes when no budget is given, capped at what max_running full-context sequences could use.
inline constexpr double kDefaultKvMemoryFraction = 0.4;

// What a configuration gives for a model, derived before any memory is allocated.
struct EngineCapacity {
    int64_t num_blocks = 0;           // usable blocks (the null block not counted)
    int64_t block_size = 0;
    int64_t bytes_per_block = 0;     // the target's KV and, with a draft model, the draft's
    int64_t kv_bytes = 0;             // of all blocks, the null block included
    int64_t kv_tokens = 0;            // positions if every group held every one: num_blocks / groups * block_size
    int64_t max_model_len = 0;
    int64_t max_sequences_at_context = 0;  // full-context sequences that fit at once
    // The model's KV groups (model/kv_groups.h): a sliding group holds a sequence's window, not its whole length.
    std::vector<int> group_windows = {0};
    int64_t layers_per_block = 0;
    int64_t max_step_tokens = 0;  // the most tokens of one sequence a step computes (--max-batched-tokens)

    int64_t max_sequences_at(int64_t sequence_tokens) const;  // sequences of that many tokens that fit at once
    std::string describe() const;     // one line for the start-up log
};

// Resolves the defaults (budget, context) of `config` for `hparams`; fails, naming the flag to change, when the
// budget holds fewer than two blocks. (A pool smaller than one full-context sequence is allowed: requests that could
// never fit are rejected one by one, with the reason.) With a draft model, each block holds its KV too (the draft's
// cache is addressed by the target's block tables), and the target's layers keep one table per sequence.
Result<EngineCapacity> plan_capacity(const HParams& hparams, const EngineConfig& config,
                                     const HParams* draft_hparams = nullptr);

// What this process can still take (base/available_memory.h): MemAvailable, or the headroom under its cgroup's
// memory limit when that is less (a container); 0 when neither can be read.
uint64_t available_memory_bytes();

}  // namespace tern::engine
