#include "base/thread_pool.h"

#include "base/check.h"

namespace tern {

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads < 1 ? 1 : num_threads) {
    for (int thread_idx = 1; thread_idx < num_threads_; ++thread_idx) {
        workers_.emplace_back([this, thread_idx] { worker_loop(thread_idx); });
    }
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    work_ready_.notify_all();
    for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::run_share(int thread_idx) {
    const int64_t count = current_count_;
    const int64_t begin = count * thread_idx / num_threads_;
    const int64_t end = count * (thread_idx + 1) / num_threads_;
    if (begin < end) current_trampoline_(current_context_, begin, end, thread_idx);
}

void ThreadPool::run(int64_t count, void* context, Trampoline trampoline) {
    if (count <= 0) return;
    if (num_threads_ == 1 || count == 1) {
        trampoline(context, 0, count, 0);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        TERN_CHECK(num_pending_ == 0) << "parallel_for is not re-entrant";
        current_context_ = context;
        current_trampoline_ = trampoline;
        current_count_ = count;
        num_pending_ = num_threads_ - 1;
        ++generation_;
    }
    work_ready_.notify_all();
    run_share(0);
    std::unique_lock<std::mutex> lock(mutex_);
    work_done_.wait(lock, [this] { return num_pending_ == 0; });
    current_context_ = nullptr;
}

void ThreadPool::worker_loop(int thread_idx) {
    uint64_t seen_generation = 0;
    while (true) {
        {
            std::unique_lock<std::mutex> lock(mutex_);
            work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen_generation; });
            if (stopping_) return;
            seen_generation = generation_;
        }
        run_share(thread_idx);
        std::lock_guard<std::mutex> lock(mutex_);
        if (--num_pending_ == 0) work_done_.notify_one();
    }
}

}  // namespace tern
