#include "base/thread_pool.h"

#include <algorithm>

#include "base/check.h"
#include "base/spin_wait.h"

namespace tern {

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads < 1 ? 1 : num_threads) {
    for (int thread_idx = 1; thread_idx < num_threads_; ++thread_idx) {
        workers_.emplace_back([this, thread_idx] { worker_loop(thread_idx); });
    }
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(sleep_mutex_);
        stopping_.store(true);
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::run_share(int thread_idx) {
    const int64_t count = current_count_, num_chunks = current_num_chunks_;
    if (num_chunks == 0) {
        const int64_t begin = count * thread_idx / num_threads_;
        const int64_t end = count * (thread_idx + 1) / num_threads_;
        if (begin < end) current_trampoline_(current_context_, begin, end, thread_idx);
        return;
    }
    for (int64_t chunk = next_chunk_.fetch_add(1, std::memory_order_relaxed); chunk < num_chunks;
         chunk = next_chunk_.fetch_add(1, std::memory_order_relaxed)) {
        current_trampoline_(current_context_, count * chunk / num_chunks, count * (chunk + 1) / num_chunks, thread_idx);
    }
}

void ThreadPool::run(int64_t count, void* context, Trampoline trampoline, bool dynamic) {
    if (count <= 0) return;
    if (num_threads_ == 1 || count == 1) {
        trampoline(context, 0, count, 0);
        return;
    }
    TERN_CHECK(num_pending_.load() == 0) << "parallel_for is not re-entrant";
    current_context_ = context;
    current_trampoline_ = trampoline;
    current_count_ = count;
    current_num_chunks_ = dynamic ? std::min(count, num_dynamic_ranges()) : 0;
    next_chunk_.store(0, std::memory_order_relaxed);
    num_pending_.store(num_threads_ - 1, std::memory_order_relaxed);
    {
        // Taking the mutex orders the bump against a worker that is about to sleep, so no wake-up is lost.
        std::lock_guard<std::mutex> lock(sleep_mutex_);
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    run_share(0);
    const auto all_done = [this] { return num_pending_.load(std::memory_order_acquire) == 0; };
    while (!spin_until(all_done)) std::this_thread::yield();
}

// Returns false when the pool is stopping.
bool ThreadPool::wait_for_generation(uint64_t seen_generation) {
    const auto changed = [&] {
        return generation_.load(std::memory_order_acquire) != seen_generation || stopping_.load(std::memory_order_relaxed);
    };
    if (spin_until(changed)) return !stopping_.load();
    std::unique_lock<std::mutex> lock(sleep_mutex_);
    wake_.wait(lock, [&] { return stopping_.load() || generation_.load(std::memory_order_acquire) != seen_generation; });
    return !stopping_.load();
}

void ThreadPool::worker_loop(int thread_idx) {
    uint64_t seen_generation = 0;
    while (wait_for_generation(seen_generation)) {
        seen_generation = generation_.load(std::memory_order_acquire);
        run_share(thread_idx);
        num_pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

}  // namespace tern
