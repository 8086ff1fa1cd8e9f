// Decoding allocates nothing per token: operator new is counted around decode steps once the model is warm.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "model/model.h"

namespace {
std::atomic<int64_t> g_num_allocations{0};
}  // namespace

void* operator new(size_t size) {
    g_num_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
    throw std::bad_alloc();
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, size_t) noexcept { std::free(memory); }

namespace tern {
namespace {

TEST(Allocation, DecodeStepsAllocateNothing) {
    auto loaded = Model::load(std::string(TERN_SHARED_DIR) + "/models/stories260K/stories260K-f32.gguf");
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    Model& model = *loaded.value();
    ThreadPool pool(2);
    KvCache cache(model.hparams(), 1, 64);
    TokenBatch batch;
    std::vector<float> logits;
    for (int32_t position = 0; position < 4; ++position) batch.add(1 + position, position, 0, position == 3);
    ASSERT_TRUE(model.forward(batch, &cache, &pool, &logits).is_ok());
    batch.clear();
    batch.add(5, 4, 0, true);
    ASSERT_TRUE(model.forward(batch, &cache, &pool, &logits).is_ok());  // warm: buffers sized for one token

    const int64_t before = g_num_allocations.load();
    for (int32_t position = 5; position < 40; ++position) {
        batch.clear();
        batch.add(position % 500, position, 0, true);
        ASSERT_TRUE(model.forward(batch, &cache, &pool, &logits).is_ok());
    }
    EXPECT_EQ(g_num_allocations.load() - before, 0);
}

}  // namespace
}  // namespace tern
