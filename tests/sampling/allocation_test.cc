// sample() must not touch the heap: this binary counts every global operator new.
#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include <gtest/gtest.h>

#include "sampling/sampler.h"
#include "sampling/sampling_test_util.h"

namespace {
std::atomic<int64_t> g_num_allocations{0};

void* counted_malloc(std::size_t size) {
    g_num_allocations.fetch_add(1, std::memory_order_relaxed);
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

}  // namespace
}  // namespace tern
