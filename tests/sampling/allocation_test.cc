// sample() must not touch the heap, and a sampler must not cost memory in proportion to the vocabulary: this binary
// counts every global operator new and the bytes it asks for.
#include <atomic>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include <gtest/gtest.h>

#include "sampling/sampler.h"
#include "sampling/sampling_test_util.h"

namespace {
std::atomic<int64_t> g_num_allocations{0};
std::atomic<int64_t> g_num_bytes{0};

void* counted_malloc(std::size_t size) {
    g_num_allocations.fetch_add(1, std::memory_order_relaxed);
    g_num_bytes.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed);
    return std::malloc(size == 0 ? 1 : size);
}
}  // namespace

// Every replaceable form that allocates with plain alignment is replaced, so malloc and free always pair up
// (AddressSanitizer reports a mismatch otherwise).
void* operator new(std::size_t size) {
    if (void* ptr = counted_malloc(size)) return ptr;
    throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
    if (void* ptr = counted_malloc(size)) return ptr;
    throw std::bad_alloc();
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return counted_malloc(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return counted_malloc(size); }
void operator delete(void* ptr) noexcept { std::free(ptr); }
void operator delete[](void* ptr) noexcept { std::free(ptr); }
void operator delete(void* ptr, std::size_t) noexcept { std::free(ptr); }
void operator delete[](void* ptr, std::size_t) noexcept { std::free(ptr); }
void operator delete(void* ptr, const std::nothrow_t&) noexcept { std::free(ptr); }
void operator delete[](void* ptr, const std::nothrow_t&) noexcept { std::free(ptr); }

namespace tern {
namespace {

TEST(AllocationTest, SampleDoesNotAllocate) {
    constexpr int32_t kVocab = 50000;
    const std::vector<float> logits = sampling_test::random_logits(kVocab, 17, -3.0f, 3.0f);
    SamplingParams all;
    all.top_k = 500;
    all.top_p = 0.9f;
    all.min_p = 0.01f;
    all.repetition_penalty = 1.2f;
    all.presence_penalty = 0.5f;
    all.frequency_penalty = 0.1f;
    SamplingParams full_sort_top_p;
    full_sort_top_p.top_p = 0.99f;  // no top-k: top-p sorts well past its first slice
    SamplingParams greedy;
    greedy.temperature = 0.0f;

    for (const SamplingParams& params : {all, full_sort_top_p, greedy}) {
        Sampler sampler(params, kVocab);
        sampler.accept_prompt({1, 2, 3, 4});
        for (int32_t token = 0; token < 10; ++token) sampler.accept(token);
        sampler.sample(logits.data());  // a thread's first sample() sizes its candidate buffer
        const int64_t before = g_num_allocations.load();
        for (int step = 0; step < 5; ++step) sampler.sample(logits.data());
        EXPECT_EQ(g_num_allocations.load() - before, 0);
    }
    // The counter works: a vector allocates.
    const int64_t before = g_num_allocations.load();
    std::vector<int>* probe = new std::vector<int>(10);
    delete probe;
    EXPECT_EQ(g_num_allocations.load() - before, 2);
}

// A server holds a sampler for every admitted request, waiting ones included: 1,280 of them at 12 bytes per entry of
// a 152k vocabulary were 2.3 GB outside the KV budget. What a sampler allocates grows with its history only.
TEST(AllocationTest, SamplerMemoryIsNotVocabularySized) {
    constexpr int32_t kVocab = 151936;  // Qwen2.5's
    SamplingParams penalties;
    penalties.repetition_penalty = 1.1f;
    penalties.presence_penalty = 0.5f;
    penalties.frequency_penalty = 0.2f;
    penalties.top_p = 0.9f;
    penalties.min_tokens = 4;
    for (int32_t token = 0; token < 32; ++token) penalties.logit_bias.emplace_back(token * 4099 % kVocab, -5.0f);
    penalties.logit_bias.emplace_back(17, -std::numeric_limits<float>::infinity());
    std::vector<int32_t> prompt(200);
    for (size_t idx = 0; idx < prompt.size(); ++idx) prompt[idx] = static_cast<int32_t>(idx * 757 % kVocab);
    constexpr int kNumSamplers = 50;
    const int64_t before = g_num_bytes.load();
    std::vector<std::unique_ptr<Sampler>> samplers;
    for (int idx = 0; idx < kNumSamplers; ++idx) {
        samplers.push_back(std::make_unique<Sampler>(penalties, kVocab, std::vector<int32_t>{2, 151643}));
        samplers.back()->accept_prompt(prompt);
        samplers.back()->accept(7);
    }
    const int64_t per_sampler = (g_num_bytes.load() - before) / kNumSamplers;
    EXPECT_LT(per_sampler, 64 << 10) << "bytes allocated per sampler; 12 x vocabulary would be " << 12 * kVocab;
}

}  // namespace
}  // namespace tern
