#include "plan/kv_capacity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kv/kv_manager.h"

namespace tern::plan {

Status check_kv_type(const ModelShape& shape, DType kv_type) {
    switch (kv_type) {
        case DType::kF32:
        case DType::kF16:
        case DType::kBF16:
        case DType::kQ8_0:
        case DType::kQ4_0:
        case DType::kQ4_1:
        case DType::kQ5_0:
        case DType::kQ5_1:
            break;
        default:
            return invalid_argument(
                fmt::format("KV cache type {} is not supported; use f16, bf16, f32, q8_0, q5_0, "
                            "q5_1, q4_0 or q4_1",
                            dtype_name(kv_type)));
    }
    const int64_t block = dtype_traits(kv_type).block_size;
    if (shape.kv_dim() % block != 0) {
        return invalid_argument(fmt::format("KV rows of {} values ({} KV heads x {}) do not fit {} blocks of {}",
                                            shape.kv_dim(), shape.num_kv_heads, shape.head_dim, dtype_name(kv_type),
                                            block));
    }
    return Status::ok();
}

int64_t kv_bytes_per_token(const ModelShape& shape, DType kv_type) {
    return 2 * shape.num_layers * row_bytes(kv_type, shape.kv_dim());
}

KvLayout kv_layout(const ModelShape& shape) {
    const int64_t sliding = shape.sliding_window > 0 ? shape.num_sliding_layers : 0;
    return kv::kv_group_layout(shape.num_layers - sliding, sliding, static_cast<int>(shape.sliding_window));
}

int64_t workspace_bytes(const ModelShape& shape, int64_t batch_tokens) {
    const int64_t floats_per_token = 2 * shape.embedding_dim + 2 * shape.q_dim() + 2 * shape.kv_dim() +
                                     2 * shape.ffn_dim + shape.head_dim + shape.vocab_size;
    return batch_tokens * floats_per_token * 4;
}

int64_t kv_replication(const ModelShape& shape, int64_t tensor_parallel) {
    return tensor_parallel > shape.num_kv_heads ? tensor_parallel / shape.num_kv_heads : 1;
}

bool valid_tensor_parallel(const ModelShape& shape, int64_t tensor_parallel) {
    if (tensor_parallel < 1 || shape.num_heads % tensor_parallel != 0) return false;
    return shape.num_kv_heads % tensor_parallel == 0 || tensor_parallel % shape.num_kv_heads == 0;
}

ReplicaMemory replica_memory(const ModelShape& shape, const MemoryInputs& inputs, int64_t tensor_parallel,
                             int64_t pipeline_parallel, int64_t request_tokens) {
    ReplicaMemory memory;
    memory.tensor_parallel = tensor_parallel;
    memory.pipeline_parallel = pipeline_parallel;
    const int64_t num_devices = memory.devices();
    memory.memory_bytes = inputs.device_memory_bytes * num_devices;
    memory.weight_bytes = inputs.weight_bytes;
    // Activations of a layer split over the tensor-parallel ranks; each pipeline stage holds its own.
    memory.workspace_bytes = inputs.workspace_bytes / tensor_parallel * num_devices;
    memory.kv_bytes_per_token = inputs.kv_bytes_per_token * kv_replication(shape, tensor_parallel);
    memory.free_bytes = memory.memory_bytes - memory.weight_bytes;
    const double usable = static_cast<double>(memory.free_bytes - memory.workspace_bytes) * (1.0 - inputs.headroom);
    memory.kv_budget_bytes =
        inputs.kv_budget_bytes.value_or(std::max<int64_t>(0, static_cast<int64_t>(std::floor(usable))));
    const KvLayout layout = inputs.layout.group_windows.empty() ? kv_layout(shape) : inputs.layout;
    const int64_t num_groups = static_cast<int64_t>(layout.group_windows.size());
    memory.block_bytes = inputs.block_size * memory.kv_bytes_per_token * layout.layers_per_block / shape.num_layers;
    memory.kv_blocks = memory.kv_budget_bytes / memory.block_bytes;
    memory.kv_capacity_tokens = memory.kv_blocks / num_groups * inputs.block_size;  // as if every group held all
    memory.request_tokens = request_tokens;
    memory.blocks_per_request = kv::max_blocks_held(layout.group_windows, static_cast<int>(inputs.block_size),
                                                    request_tokens, inputs.max_step_tokens);
    // Theory counts bytes, not blocks: every position of every layer, or (with windows) the blocks held.
    const bool windows = num_groups > 1 || layout.group_windows.front() > 0;
    memory.request_bytes =
        windows ? memory.blocks_per_request * memory.block_bytes : request_tokens * memory.kv_bytes_per_token;
    memory.max_concurrent = memory.free_bytes > 0 ? memory.free_bytes / memory.request_bytes : 0;
    memory.recommended_concurrent = memory.kv_blocks / memory.blocks_per_request;
    return memory;
}

}  // namespace tern::plan
