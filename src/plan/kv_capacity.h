// The memory side of a plan: KV-cache bytes per token and per request, the paged-cache budget left after weights
// and workspace, and how many requests it holds. `tern serve` must size its paged cache with the same arithmetic,
// so that for one memory budget both report the same number of blocks.
//
//   KV bytes per token   = 2 (K and V) x layers x row_bytes(kv_type, kv_heads x head_dim)
//   block bytes          = block_size (16 tokens) x KV bytes per token
//   KV budget            = (memory - weights - workspace) x (1 - headroom)
//   KV blocks            = floor(KV budget / block bytes)
//   blocks per request   = ceil(request tokens / block_size)
// A model with sliding-window and full layers (Gemma 2/3) has KV groups (model/kv_groups.h): a block holds the
// layers of one group, a full group holds every block of a request, a sliding group its window and a step's tokens
// (kv::max_blocks_held).
//   recommended requests = floor(KV blocks / blocks per request)
//   theoretical requests = floor((memory - weights) / (request tokens x KV bytes per token))
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "kv/kv_manager.h"
#include "plan/device.h"
#include "plan/model_shape.h"
#include "tensor/dtype.h"

namespace tern::plan {

inline constexpr int64_t kDefaultBlockSize = 16;

// KV cache types the planner sizes: plain floats and the 8/4/5-bit ggml block types.
Status check_kv_type(const ModelShape& shape, DType kv_type);
int64_t kv_bytes_per_token(const ModelShape& shape, DType kv_type);

// How the engine lays out a model's KV blocks (kv::kv_group_layout of its full and sliding layer counts).
using KvLayout = kv::KvGroupLayout;
KvLayout kv_layout(const ModelShape& shape);

// Scratch of one forward pass over `batch_tokens` tokens, as tern's CPU engine allocates it (f32 activations:
// hidden and normed rows, q, k, v, attention output, gate and up, RoPE cos/sin, and a row of logits per token).
int64_t workspace_bytes(const ModelShape& shape, int64_t batch_tokens);

inline int64_t blocks_for_tokens(int64_t tokens, int64_t block_size) { return (tokens + block_size - 1) / block_size; }

// Tensor parallelism splits heads over devices; with more devices than KV heads, KV heads are replicated.
int64_t kv_replication(const ModelShape& shape, int64_t tensor_parallel);
bool valid_tensor_parallel(const ModelShape& shape, int64_t tensor_parallel);

struct ReplicaMemory {
    int64_t tensor_parallel = 1;
    int64_t pipeline_parallel = 1;
    int64_t memory_bytes = 0;        // device memory x devices
    int64_t weight_bytes = 0;        // one copy, split over the devices
    int64_t workspace_bytes = 0;     // per device workspace / tensor_parallel, x devices
    int64_t kv_bytes_per_token = 0;  // x KV-head replication
    int64_t free_bytes = 0;          // memory - weights (may be negative: does not fit)
    int64_t kv_budget_bytes = 0;     // (memory - weights - workspace) x (1 - headroom), at least 0
    int64_t block_bytes = 0;
    int64_t kv_blocks = 0;
    int64_t kv_capacity_tokens = 0;  // kv_blocks x block_size
    int64_t request_tokens = 0;
    int64_t blocks_per_request = 0;
    int64_t request_bytes = 0;   // KV of one request in theory: every position, or (with windows) its blocks
    int64_t max_concurrent = 0;  // theoretical: all free memory holds KV, no workspace, no headroom
    int64_t recommended_concurrent = 0;

    int64_t devices() const { return tensor_parallel * pipeline_parallel; }
    bool fits() const { return recommended_concurrent >= 1; }
};

struct MemoryInputs {
    int64_t device_memory_bytes = 0;
    int64_t weight_bytes = 0;
    int64_t kv_bytes_per_token = 0;  // one model copy
    int64_t workspace_bytes = 0;     // one device at tensor_parallel 1
    double headroom = 0.2;
    int64_t block_size = kDefaultBlockSize;
    KvLayout layout;                  // kv_layout() of the model (empty: derived from the shape)
    int64_t max_step_tokens = 512;    // tokens a step computes at most (a sliding group holds a step's tokens)
    // A KV budget given outright (per replica), as `tern serve` is given one; replaces the budget formula.
    std::optional<int64_t> kv_budget_bytes;
};

ReplicaMemory replica_memory(const ModelShape& shape, const MemoryInputs& inputs, int64_t tensor_parallel,
                             int64_t pipeline_parallel, int64_t request_tokens);

}  // namespace tern::plan
