#include "model/kv_cache.h"

#include <fmt/format.h>

#include <cstring>

#include "base/check.h"
#include "base/huge_pages.h"

namespace tern {

std::string_view kv_type_name(KvType type) {
    switch (type) {
        case KvType::kF32: return "f32";
        case KvType::kF16: return "f16";
        case KvType::kQ8_0: return "q8_0";
    }
    return "?";
}

Result<KvType> parse_kv_type(std::string_view name) {
    for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
        if (name == kv_type_name(type)) return type;
    }
    return invalid_argument(fmt::format("unknown KV cache type '{}'; use f16, q8_0 or f32", name));
}

int64_t KvCache::bytes_per_block(const HParams& hparams, int64_t block_size, KvType type, int64_t layers_per_block) {
    const int64_t layers = layers_per_block > 0 ? layers_per_block : hparams.num_layers;
    return layers * 2 * block_size * kernels::kv_row_bytes(type, hparams.kv_dim());
}

Status KvCache::check_type(const HParams& hparams, KvType type) {
    if (type == KvType::kQ8_0 && hparams.head_dim % 32 != 0) {
        return invalid_argument(fmt::format(
            "a q8_0 KV cache needs a head size that is a multiple of 32 (this model's is {}); use f16", hparams.head_dim));
    }
    return Status::ok();
}

Result<std::unique_ptr<KvCache>> KvCache::create_paged(const HParams& hparams, int64_t num_blocks,
                                                      int64_t block_size, KvType type, int64_t layers_per_block) {
    TERN_RETURN_IF_ERROR(check_type(hparams, type));
    if (num_blocks < 2 || block_size < 1) {
        return invalid_argument(fmt::format("a paged KV cache needs at least 2 blocks of at least 1 token (got {} of {})",
                                            num_blocks, block_size));
    }
    std::unique_ptr<KvCache> cache(new KvCache(PagedTag{}, hparams, num_blocks, block_size, type, layers_per_block));
    if (cache->storage_ == nullptr) {
        return Status(StatusCode::kResourceExhausted,
                      fmt::format("cannot allocate {:.2f} GiB for the KV cache; lower --kv-cache-mem",
                                  static_cast<double>(num_blocks * cache->block_bytes_) / (1ull << 30)));
    }
    return cache;
}

KvCache::KvCache(PagedTag, const HParams& hparams, int64_t num_blocks, int64_t block_size, KvType type,
                 int64_t layers_per_block)
    : type_(type),
      block_size_(block_size),
      num_blocks_(num_blocks),
      num_layers_(layers_per_block > 0 ? layers_per_block : hparams.num_layers),
      num_kv_heads_(hparams.num_kv_heads),
      slice_bytes_(kernels::kv_row_bytes(type, hparams.head_dim)),
      block_bytes_(bytes_per_block(hparams, block_size, type, layers_per_block)),
      storage_(allocate_large(static_cast<size_t>(num_blocks * block_bytes_))) {}  // create_paged checks storage_

KvCache::KvCache(const HParams& hparams, int64_t num_slots, int64_t max_tokens, KvType type, int64_t block_size)
    : KvCache(PagedTag{}, hparams, num_slots * ((max_tokens + block_size - 1) / block_size), block_size, type, 0) {
    TERN_CHECK(storage_ != nullptr) << "cannot allocate " << num_blocks_ * block_bytes_ << " bytes of KV cache";
    TERN_CHECK(check_type(hparams, type).is_ok()) << "KV type does not suit the model";
    num_slots_ = num_slots;
    max_tokens_ = max_tokens;
    blocks_per_slot_ = (max_tokens + block_size - 1) / block_size;
    slot_tables_.resize(static_cast<size_t>(num_blocks_));
    for (int64_t block = 0; block < num_blocks_; ++block) slot_tables_[static_cast<size_t>(block)] = static_cast<int32_t>(block);
}

void KvCache::copy_block(int64_t from, int64_t to) {
    TERN_CHECK(from >= 0 && from < num_blocks_ && to >= 0 && to < num_blocks_) << "block out of range";
    if (from == to) return;
    for (int64_t layer_idx = 0; layer_idx < num_layers_; ++layer_idx) {
        for (int64_t kv_head = 0; kv_head < num_kv_heads_; ++kv_head) {
            for (int64_t which = 0; which < 2; ++which) {
                std::memcpy(slice_address(layer_idx, to, kv_head, 0, which),
                            slice_address(layer_idx, from, kv_head, 0, which),
                            static_cast<size_t>(block_size_ * slice_bytes_));
            }
        }
    }
}

}  // namespace tern
