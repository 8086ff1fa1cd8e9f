#include "engine/engine_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include "base/available_memory.h"
#include "base/log.h"
#include "kv/kv_manager.h"
#include "model/kv_groups.h"

namespace tern::engine {

Result<SchedulingPolicy> parse_scheduling_policy(std::string_view name) {
    if (name == "fcfs") return SchedulingPolicy::kFcfs;
    if (name == "priority") return SchedulingPolicy::kPriority;
    return invalid_argument(fmt::format("--scheduling-policy must be fcfs or priority, got '{}'", name));
}

Status EngineConfig::validate() const {
    if (block_size < 1 || block_size > 1024) return invalid_argument("--block-size must be in [1, 1024]");
    if (max_batched_tokens < 1) return invalid_argument("--max-batched-tokens must be >= 1");
    if (max_running < 1) return invalid_argument("--max-running must be >= 1");
    if (max_queued_requests < 1) return invalid_argument("--max-queued-requests must be >= 1");
    if (max_queued_tokens < 1) return invalid_argument("--max-queued-tokens must be >= 1");
    if (max_model_len < 0) return invalid_argument("--max-model-len must be >= 0 (0 = the model's context)");
    const SpeculativeConfig& spec = speculative;
    if (spec.num_speculative_tokens < 0 || spec.num_speculative_tokens > 32) {
        return invalid_argument("--num-speculative-tokens must be in [0, 32]");
    }
    if (spec.ngram.min_n < 1 || spec.ngram.max_n < spec.ngram.min_n) {
        return invalid_argument("the n-gram lengths must satisfy 1 <= --spec-ngram-min <= --spec-ngram-max");
    }
    if (spec.disable_by_batch_size < 1) return invalid_argument("--speculative-disable-by-batch-size must be >= 1");
    return Status::ok();
}

int64_t EngineCapacity::max_sequences_at(int64_t sequence_tokens) const {
    if (sequence_tokens < 1) return 0;
    const int64_t blocks_each =
        kv::max_blocks_held(group_windows, static_cast<int>(block_size), sequence_tokens, max_step_tokens);
    return num_blocks / blocks_each;
}

std::string EngineCapacity::describe() const {
    std::string groups;
    if (group_windows.size() > 1 || group_windows.front() > 0) {
        int64_t sliding = std::count_if(group_windows.begin(), group_windows.end(), [](int w) { return w > 0; });
        groups = fmt::format(" ({} layers a block; {} full and {} sliding-window groups)", layers_per_block,
                             static_cast<int64_t>(group_windows.size()) - sliding, sliding);
    }
    return fmt::format("KV cache: {} blocks of {} tokens{}, {:.1f} MiB; context {} tokens: {} sequences at full "
                       "context at once",
                       num_blocks, block_size, groups, static_cast<double>(kv_bytes) / (1 << 20), max_model_len,
                       max_sequences_at_context);
}

uint64_t available_memory_bytes() {
    const AvailableMemory memory = read_available_memory();
    if (memory.cgroup_headroom && *memory.cgroup_headroom < memory.host_available) {
        log_info("memory: {:.2f} GiB available under the cgroup limit of {} (the host has {:.2f} GiB)",
                 static_cast<double>(*memory.cgroup_headroom) / (1ull << 30), memory.cgroup_limited_by,
                 static_cast<double>(memory.host_available) / (1ull << 30));
    }
    return memory.bytes();
}

namespace {

// A budget asked for explicitly must fit in the memory available now (the model is loaded by then): allocating
// more would fail, or worse succeed on overcommit and bring the OOM killer when the cache is first touched. A tenth
// stays free for the activations and the server's own buffers.
Status check_budget_fits(uint64_t budget, uint64_t available) {
    const uint64_t fits = available / 10 * 9;
    if (budget == 0 || available == 0 || budget <= fits) return Status::ok();
    const double gib = 1ull << 30;
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("--kv-cache-mem {:.2f} GiB does not fit: {:.2f} GiB of memory is available now; the "
                              "largest KV cache budget that fits is --kv-cache-mem {:.2f}",
                              static_cast<double>(budget) / gib, static_cast<double>(available) / gib,
                              std::floor(static_cast<double>(fits) / gib * 100) / 100));
}

}  // namespace

Result<EngineCapacity> plan_capacity(const HParams& hparams, const EngineConfig& config,
                                     const HParams* draft_hparams) {
    TERN_RETURN_IF_ERROR(config.validate());
    TERN_RETURN_IF_ERROR(KvCache::check_type(hparams, config.kv_type));
    if (draft_hparams != nullptr) TERN_RETURN_IF_ERROR(KvCache::check_type(*draft_hparams, config.kv_type));
    EngineCapacity capacity;
    capacity.block_size = config.block_size;
    capacity.max_model_len = config.max_model_len > 0 ? config.max_model_len : hparams.context_length;
    if (capacity.max_model_len < 2) return invalid_argument("the model declares no context length; set --max-model-len");
    const bool hybrid = config.hybrid_kv_cache && draft_hparams == nullptr;
    KvGroups groups = hybrid ? kv_groups_for(hparams) : single_kv_group(hparams);
    if (!hybrid) groups.windows = {0};
    capacity.group_windows = groups.windows;
    capacity.layers_per_block = groups.layers_per_block;
    capacity.max_step_tokens = config.max_batched_tokens;
    capacity.bytes_per_block =
        KvCache::bytes_per_block(hparams, config.block_size, config.kv_type, groups.layers_per_block);
    if (draft_hparams != nullptr) {
        capacity.bytes_per_block += KvCache::bytes_per_block(*draft_hparams, config.block_size, config.kv_type);
    }
    const int64_t blocks_per_sequence = kv::max_blocks_held(groups.windows, config.block_size,
                                                            capacity.max_model_len, config.max_batched_tokens);
    uint64_t budget = config.kv_cache_bytes;
    const uint64_t available = available_memory_bytes();
    TERN_RETURN_IF_ERROR(check_budget_fits(budget, available));
    if (budget == 0) {
        const uint64_t cap = static_cast<uint64_t>(capacity.bytes_per_block) *
                             static_cast<uint64_t>(blocks_per_sequence * config.max_running + 1);
        budget = std::min(static_cast<uint64_t>(kDefaultKvMemoryFraction * available), cap);
    }
    const uint64_t num_blocks = budget / static_cast<uint64_t>(capacity.bytes_per_block);
    if (num_blocks < 2) {
        return invalid_argument(fmt::format("the KV cache budget of {} bytes holds fewer than 2 blocks of {} bytes; "
                                            "raise --kv-cache-mem", budget, capacity.bytes_per_block));
    }
    capacity.num_blocks = static_cast<int64_t>(std::min<uint64_t>(num_blocks, 1u << 30)) - 1;
    capacity.kv_bytes = (capacity.num_blocks + 1) * capacity.bytes_per_block;
    capacity.kv_tokens = capacity.num_blocks / groups.num_groups() * config.block_size;
    capacity.max_sequences_at_context = capacity.max_sequences_at(capacity.max_model_len);
    return capacity;
}

}  // namespace tern::engine
