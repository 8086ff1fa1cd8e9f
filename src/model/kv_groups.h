// How a model's layers share KV blocks (vLLM's KV cache groups). A model whose layers all attend alike (all to
// every position, or all to a sliding window) has one group of every layer. A model that mixes sliding-window and
// full-attention layers (Gemma 2 and 3) has its layers of each kind cut into groups of the same size, so that a
// block always holds that many layers' K and V for block_size positions and every group draws on one pool: a
// full group keeps a request's blocks for every position, a sliding group for its window only (kv/kv_manager.h).
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_manager.h"
#include "model/hparams.h"

namespace tern {

struct KvGroups {
    std::vector<int> windows;             // per group: 0 for full attention, or the window in tokens
    std::vector<int32_t> group_of_layer;  // per layer
    std::vector<int32_t> slot_of_layer;   // per layer: its place among the layers a block holds
    int64_t layers_per_block = 0;         // a short last group of a kind leaves slots unused

    int64_t num_groups() const { return static_cast<int64_t>(windows.size()); }
};

// The groups of `hparams`, laid out by kv::kv_group_layout, each kind's layers in order.
KvGroups kv_groups_for(const HParams& hparams);

// One group of every layer, in order (what a cache without block tables per group holds): window 0, since a mixed
// model's sliding layers then keep every position too (their attention still stops at the window).
KvGroups single_kv_group(const HParams& hparams);

}  // namespace tern
