#include "bench/load_runner.h"

#include <time.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

namespace tern::bench {
namespace {

struct Job {
    int64_t index = 0;
    double arrival_s = 0;
};

// Request threads and the in-flight count that --max-concurrency limits. A job counts as in flight from submit()
// until its response is recorded.
class WorkerPool {
public:
    WorkerPool(const SpecFn& spec_at, const SenderFactory& make_sender, LoadObserver* observer,
               Clock::time_point run_start)
        : spec_at_(spec_at), make_sender_(make_sender), observer_(observer), run_start_(run_start) {}

    // Waits until fewer than `limit` requests are in flight; false if `deadline` passed first.
    bool acquire_slot(int64_t limit, std::optional<Clock::time_point> deadline) {
        std::unique_lock lock(mutex_);
        auto has_slot = [&] { return in_flight_ < limit; };
        if (!deadline) {
            slot_cv_.wait(lock, has_slot);
            return true;
        }
        return slot_cv_.wait_until(lock, *deadline, has_slot);
    }

    void submit(const Job& job) {
        std::lock_guard lock(mutex_);
        jobs_.push_back(job);
        ++in_flight_;
        if (static_cast<int64_t>(jobs_.size()) > idle_) {
            threads_.emplace_back([this] { work(); });
        } else {
            work_cv_.notify_one();
        }
    }

    // Lets the threads finish what is queued, joins them and returns the records.
    std::vector<RequestRecord> finish(double* cpu_s, int64_t* num_threads) {
        {
            std::lock_guard lock(mutex_);
            closing_ = true;
        }
        work_cv_.notify_all();
        for (std::thread& thread : threads_) thread.join();
        *cpu_s = cpu_s_;
        *num_threads = static_cast<int64_t>(threads_.size());
        return std::move(records_);
    }

private:
    void work() {
        std::unique_ptr<RequestSender> sender = make_sender_();
        std::unique_lock lock(mutex_);
        while (true) {
            ++idle_;
            work_cv_.wait(lock, [&] { return !jobs_.empty() || closing_; });
            --idle_;
            if (jobs_.empty()) break;
            const Job job = jobs_.front();
            jobs_.pop_front();
            lock.unlock();
            // The prompt is made here, not by the dispatcher, so that arrivals stay on time.
            const RequestSpec spec = spec_at_(job.index);
            if (observer_ != nullptr) observer_->on_sent(job.index);
            RequestRecord record = sender->send(spec, run_start_);
            record.index = job.index;
            record.arrival_s = job.arrival_s;
            if (observer_ != nullptr) observer_->on_done(record);
            lock.lock();
            records_.push_back(std::move(record));
            --in_flight_;
            slot_cv_.notify_one();
        }
        cpu_s_ += thread_cpu_seconds();
    }

    const SpecFn& spec_at_;
    const SenderFactory& make_sender_;
    LoadObserver* observer_;
    Clock::time_point run_start_;
    std::mutex mutex_;
    std::condition_variable work_cv_;
    std::condition_variable slot_cv_;
    std::deque<Job> jobs_;
    std::vector<std::thread> threads_;
    std::vector<RequestRecord> records_;
    int64_t in_flight_ = 0;
    int64_t idle_ = 0;
    bool closing_ = false;
    double cpu_s_ = 0;
};

}  // namespace

double thread_cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

LoadResult run_load(const std::vector<RequestSpec>& workload, const LoadOptions& options,
                    const SenderFactory& make_sender, LoadObserver* observer) {
    if (workload.empty()) return {};
    const SpecFn spec_at = [&workload](int64_t index) {
        return workload[static_cast<size_t>(index) % workload.size()];
    };
    return run_load(spec_at, options, make_sender, observer);
}

LoadResult run_load(const SpecFn& spec_at, const LoadOptions& options, const SenderFactory& make_sender,
                    LoadObserver* observer) {
    LoadResult result;
    if (options.num_requests <= 0) return result;
    const double dispatcher_cpu_start = thread_cpu_seconds();
    const int64_t limit = options.max_concurrency > 0 ? options.max_concurrency : kMaxInFlight;
    GapSampler gaps(options.arrivals, options.seed);
    const Clock::time_point run_start = Clock::now();
    result.start = run_start;
    std::optional<Clock::time_point> deadline;
    if (options.duration_s > 0) {
        deadline = run_start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(options.duration_s));
    }
    WorkerPool pool(spec_at, make_sender, observer, run_start);
    double arrival_s = 0;
    for (int64_t index = 0; index < options.num_requests; ++index) {
        if (index > 0) arrival_s += gaps.next_gap_s();
        if (options.duration_s > 0 && arrival_s >= options.duration_s) break;
        std::this_thread::sleep_until(run_start + std::chrono::duration_cast<Clock::duration>(
                                                      std::chrono::duration<double>(arrival_s)));
        if (!pool.acquire_slot(limit, deadline)) break;
        pool.submit({index, arrival_s});
    }
    result.records = pool.finish(&result.client_cpu_s, &result.num_threads);
    result.duration_s = std::chrono::duration<double>(Clock::now() - run_start).count();
    result.client_cpu_s += thread_cpu_seconds() - dispatcher_cpu_start;
    std::sort(result.records.begin(), result.records.end(),
              [](const RequestRecord& a, const RequestRecord& b) { return a.index < b.index; });
    return result;
}

}  // namespace tern::bench
