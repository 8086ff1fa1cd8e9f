// A persistent pool of worker threads for data-parallel loops. Threads are created once; each
// parallel_for wakes them, splits [0, count) into one contiguous range per thread, and waits.
// Not re-entrant: call parallel_for from one thread at a time (the owner, e.g. the model's forward pass).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
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
    using RangeFn = std::function<void(int64_t begin, int64_t end, int thread_idx)>;
    void parallel_for(int64_t count, const RangeFn& fn);

private:
    void worker_loop(int thread_idx);
    void run_share(int thread_idx);

    int num_threads_;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable work_done_;
    const RangeFn* current_fn_ = nullptr;
    int64_t current_count_ = 0;
    uint64_t generation_ = 0;
    int num_pending_ = 0;
    bool stopping_ = false;
};

}  // namespace tern
