#include "model/kv_cache.h"

namespace tern {

KvCache::KvCache(const HParams& hparams, int64_t num_slots, int64_t max_tokens)
    : num_slots_(num_slots), max_tokens_(max_tokens), kv_dim_(hparams.kv_dim()) {
    storage_.assign(static_cast<size_t>(hparams.num_layers * num_slots * 2 * max_tokens * kv_dim_), 0.0f);
}

}  // namespace tern
