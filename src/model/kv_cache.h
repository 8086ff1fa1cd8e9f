// A contiguous f32 KV cache: for each layer and sequence slot, `max_tokens` rows of keys and of values.
// The serving engine replaces it with a paged cache; this one serves single-sequence generation and tests.
#pragma once

#include <cstdint>
#include <vector>

#include "model/hparams.h"

namespace tern {

class KvCache {
public:
    KvCache(const HParams& hparams, int64_t num_slots, int64_t max_tokens);

    int64_t num_slots() const { return num_slots_; }
    int64_t max_tokens() const { return max_tokens_; }
    int64_t kv_dim() const { return kv_dim_; }
    int64_t num_bytes() const { return static_cast<int64_t>(storage_.size() * sizeof(float)); }

    // The kv_dim floats of keys (or values) at `position`; rows of one slot are kv_dim floats apart.
    float* keys(int64_t layer_idx, int64_t slot_idx, int64_t position) { return row(layer_idx, slot_idx, position, 0); }
    float* values(int64_t layer_idx, int64_t slot_idx, int64_t position) { return row(layer_idx, slot_idx, position, 1); }

private:
    float* row(int64_t layer_idx, int64_t slot_idx, int64_t position, int64_t which) {
        const int64_t block = ((layer_idx * num_slots_ + slot_idx) * 2 + which) * max_tokens_ + position;
        return storage_.data() + block * kv_dim_;
    }

    int64_t num_slots_;
    int64_t max_tokens_;
    int64_t kv_dim_;
    std::vector<float> storage_;
};

}  // namespace tern
