// A copied KV block is a valid context: a sequence whose blocks were copied from another's decodes exactly as the
// sequence whose prefill wrote them (what `tern bench model -d` relies on to give every batched sequence a context).
#include <gtest/gtest.h>

#include "model/model.h"

namespace tern {
namespace {

std::vector<float> logits_after(Model& model, ThreadPool& pool, KvCache& cache, int32_t slot, int32_t position,
                                int32_t token) {
    TokenBatch batch;
    batch.add(token, position, slot, true);
    std::vector<float> logits;
    EXPECT_TRUE(model.forward(batch, &cache, &pool, &logits).is_ok());
    return logits;
}

TEST(KvCopy, SequenceWithCopiedBlocksDecodesAsTheOriginal) {
    auto loaded = Model::load(std::string(TERN_SHARED_DIR) + "/models/stories260K/stories260K-f32.gguf");
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    Model& model = *loaded.value();
    ThreadPool pool(2);
    for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
        SCOPED_TRACE(std::string(kv_type_name(type)));
        if (!KvCache::check_type(model.hparams(), type).is_ok()) continue;  // q8_0 needs heads of 32k values
        constexpr int32_t kContext = 37;  // two full blocks of 16 and a partial one
        KvCache cache(model.hparams(), 3, 64, type);
        TokenBatch prefill;
        for (int32_t position = 0; position < kContext; ++position) {
            prefill.add(1 + (position * 37) % 500, position, 0, position + 1 == kContext);
        }
        std::vector<float> logits;
        ASSERT_TRUE(model.forward(prefill, &cache, &pool, &logits).is_ok());
        for (int64_t idx = 0; idx < 3; ++idx) {
            cache.copy_block(cache.slot_block_table(0)[static_cast<size_t>(idx)],
                             cache.slot_block_table(1)[static_cast<size_t>(idx)]);
        }
        const std::vector<float> original = logits_after(model, pool, cache, 0, kContext, 42);
        const std::vector<float> copied = logits_after(model, pool, cache, 1, kContext, 42);
        const std::vector<float> empty = logits_after(model, pool, cache, 2, 0, 42);
        EXPECT_EQ(copied, original);
        EXPECT_NE(empty, original);  // the context matters, so equal logits mean the copy carried it
    }
}

}  // namespace
}  // namespace tern
