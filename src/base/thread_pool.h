// A persistent pool of worker threads for data-parallel loops. Threads are created once; each
// parallel_for wakes them, splits [0, count) into one contiguous range per thread, and waits.
// Not re-entrant: call parallel_for from one thread at a time (the owner, e.g. the model's forward pass).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <thread>
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

    // Calls fn(begin, end, thread_idx) over a balanced split of [0, count); returns when all ranges are done.
    // `fn` is passed by reference, never copied: no allocation per call (the decode loop calls this per matmul).
    template <typename Fn>
    void parallel_for(int64_t count, Fn&& fn) {
        using FnType = std::remove_reference_t<Fn>;
        const Trampoline trampoline = [](void* context, int64_t begin, int64_t end, int thread_idx) {
            (*static_cast<FnType*>(context))(begin, end, thread_idx);
        };
        run(count, const_cast<void*>(static_cast<const void*>(&fn)), trampoline);
    }

private:
    using Trampoline = void (*)(void* context, int64_t begin, int64_t end, int thread_idx);
    void run(int64_t count, void* context, Trampoline trampoline);
    void worker_loop(int thread_idx);
    void run_share(int thread_idx);

    int num_threads_;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable work_done_;
    void* current_context_ = nullptr;
    Trampoline current_trampoline_ = nullptr;
    int64_t current_count_ = 0;
    uint64_t generation_ = 0;
    int num_pending_ = 0;
    bool stopping_ = false;
};

}  // namespace tern
