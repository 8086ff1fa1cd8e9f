// A persistent pool of worker threads for data-parallel loops. Threads are created once; each
// parallel_for wakes them, splits [0, count) into one contiguous range per thread (or, in parallel_for_dynamic,
// into smaller ranges handed to whichever thread is free), and waits.
// Workers spin briefly between loops before sleeping, because a decode step issues hundreds of short loops
// and a futex wake-up per loop would cost more than the work. Not re-entrant: call parallel_for from one
// thread at a time (the owner, e.g. the model's forward pass).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace tern {

class ThreadPool {
public:
    // `num_threads` counts the calling thread, which also does a share of the work.
    explicit ThreadPool(int num_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int num_threads() const { return num_threads_; }
    // How many ranges parallel_for_dynamic cuts a loop of at least that many units into: a loop that prepares its
    // own units (balanced by cost) makes this many.
    int64_t num_dynamic_ranges() const { return num_threads_ == 1 ? 1 : num_threads_ * kChunksPerThread; }

    // Calls fn(begin, end, thread_idx) over a balanced split of [0, count); returns when all ranges are done.
    // `fn` is passed by reference, never copied: no allocation per call (the decode loop calls this per matmul).
    template <typename Fn>
    void parallel_for(int64_t count, Fn&& fn) {
        run(count, const_cast<void*>(static_cast<const void*>(&fn)), trampoline_for<Fn>(), /*dynamic=*/false);
    }

    // As parallel_for, but [0, count) is cut into up to num_dynamic_ranges() ranges that go to whichever thread
    // asks next, so a thread slowed by the machine (another tenant, an interrupt) takes fewer. Only for loops whose
    // results do not depend on which thread runs which range (thread_idx for scratch space only): the model's
    // matmuls and attention parts.
    template <typename Fn>
    void parallel_for_dynamic(int64_t count, Fn&& fn) {
        run(count, const_cast<void*>(static_cast<const void*>(&fn)), trampoline_for<Fn>(), /*dynamic=*/true);
    }

private:
    using Trampoline = void (*)(void* context, int64_t begin, int64_t end, int thread_idx);
    static constexpr int64_t kChunksPerThread = 8;

    template <typename Fn>
    static Trampoline trampoline_for() {
        using FnType = std::remove_reference_t<Fn>;
        return [](void* context, int64_t begin, int64_t end, int thread_idx) {
            (*static_cast<FnType*>(context))(begin, end, thread_idx);
        };
    }
    void run(int64_t count, void* context, Trampoline trampoline, bool dynamic);
    void worker_loop(int thread_idx);
    void run_share(int thread_idx);
    bool wait_for_generation(uint64_t seen_generation);

    int num_threads_;
    std::vector<std::thread> workers_;
    // The current loop; written before `generation_` is bumped (release) and read after it is seen (acquire).
    void* current_context_ = nullptr;
    Trampoline current_trampoline_ = nullptr;
    int64_t current_count_ = 0;
    int64_t current_num_chunks_ = 0;  // 0: one contiguous range per thread
    std::atomic<int64_t> next_chunk_{0};
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> num_pending_{0};
    std::atomic<bool> stopping_{false};
    std::mutex sleep_mutex_;
    std::condition_variable wake_;
};

}  // namespace tern
