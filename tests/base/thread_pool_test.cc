#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/thread_pool.h"

namespace tern {
namespace {

TEST(ThreadPool, EveryIndexRunsExactlyOnce) {
    for (int num_threads : {1, 2, 3, 8}) {
        ThreadPool pool(num_threads);
        for (int64_t count : {0, 1, 2, 7, 1000}) {
            std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
            std::atomic<int> max_thread{0};
            pool.parallel_for(count, [&](int64_t begin, int64_t end, int thread_idx) {
                for (int64_t idx = begin; idx < end; ++idx) hits[static_cast<size_t>(idx)]++;
                int seen = max_thread.load();
                while (thread_idx > seen && !max_thread.compare_exchange_weak(seen, thread_idx)) {}
            });
            for (const auto& hit : hits) EXPECT_EQ(hit.load(), 1) << num_threads << " threads, count " << count;
            EXPECT_LT(max_thread.load(), num_threads);
        }
    }
}

// Dynamic loops: every index once, in ranges of about count / (8 x threads), a thread index below the pool's size
// for each, and a busy thread leaves the rest to the others.
TEST(ThreadPool, DynamicLoopsRunEveryIndexOnceInSmallRanges) {
    for (int num_threads : {1, 2, 3}) {
        ThreadPool pool(num_threads);
        for (int64_t count : {0, 1, 5, 48, 1001}) {
            std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
            std::atomic<int64_t> num_ranges{0}, largest{0};
            std::atomic<int> bad_thread{0};
            pool.parallel_for_dynamic(count, [&](int64_t begin, int64_t end, int thread_idx) {
                for (int64_t idx = begin; idx < end; ++idx) hits[static_cast<size_t>(idx)]++;
                ++num_ranges;
                int64_t seen = largest.load();
                while (end - begin > seen && !largest.compare_exchange_weak(seen, end - begin)) {}
                if (thread_idx < 0 || thread_idx >= num_threads) ++bad_thread;
            });
            for (const auto& hit : hits) EXPECT_EQ(hit.load(), 1) << num_threads << " threads, count " << count;
            EXPECT_EQ(bad_thread.load(), 0);
            if (num_threads > 1 && count > 1) {
                const int64_t ranges = pool.num_dynamic_ranges();
                EXPECT_GE(ranges, 8 * num_threads);  // small enough that a slow thread's tail is short
                EXPECT_EQ(num_ranges.load(), std::min<int64_t>(count, ranges)) << count;
                EXPECT_LE(largest.load(), (count + ranges - 1) / ranges) << count;
            }
        }
    }
}

TEST(ThreadPool, DynamicLoopsLeaveASlowThreadsShareToTheOthers) {
    ThreadPool pool(2);
    std::vector<std::atomic<int64_t>> done_by(2);
    pool.parallel_for_dynamic(64, [&](int64_t begin, int64_t end, int thread_idx) {
        // The worker's ranges take far longer than the caller's, as if its core were shared.
        if (thread_idx == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        done_by[static_cast<size_t>(thread_idx)] += end - begin;
    });
    EXPECT_EQ(done_by[0].load() + done_by[1].load(), 64);
    EXPECT_GT(done_by[0].load(), 32);  // a static split would give each exactly 32
}

TEST(ThreadPool, SplitIsBalanced) {
    ThreadPool pool(3);
    std::vector<int64_t> sizes(3, 0);
    pool.parallel_for(100, [&](int64_t begin, int64_t end, int thread_idx) { sizes[static_cast<size_t>(thread_idx)] = end - begin; });
    for (int64_t size : sizes) EXPECT_TRUE(size == 33 || size == 34) << size;
}

TEST(ThreadPool, ManyConsecutiveCallsSeeAllWork) {
    ThreadPool pool(2);
    int64_t total = 0;
    std::vector<int64_t> partial(2);
    for (int call = 0; call < 2000; ++call) {
        partial.assign(2, 0);
        pool.parallel_for(10, [&](int64_t begin, int64_t end, int thread_idx) {
            for (int64_t idx = begin; idx < end; ++idx) partial[static_cast<size_t>(thread_idx)] += idx;
        });
        total += partial[0] + partial[1];
    }
    EXPECT_EQ(total, 2000 * 45);
}

}  // namespace
}  // namespace tern
