#include <gtest/gtest.h>

#include <atomic>
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
