// How long the thread pool spins before it gives its core away, and what a short parallel loop costs:
// `build/benchmarks/thread_pool_bench`. The old bound was 16,384 PAUSEs (its time depends on the CPU: ~10 cycles a
// PAUSE on Zen, ~140 on Intel since Skylake); the new one is kSpinBudget of wall time.
#include <benchmark/benchmark.h>

#include <atomic>

#include "base/spin_wait.h"
#include "base/thread_pool.h"

namespace tern {
namespace {

// The old spin bound, for comparison: 16,384 PAUSEs in a row.
void BM_OldSpinBound16384Pauses(benchmark::State& state) {
    for (auto _ : state) {
        for (int spin = 0; spin < (1 << 14); ++spin) cpu_relax();
    }
}
BENCHMARK(BM_OldSpinBound16384Pauses)->Unit(benchmark::kMicrosecond);

// A spin whose condition never holds: it must end after kSpinBudget whatever the CPU.
void BM_SpinUntilBudget(benchmark::State& state) {
    std::atomic<bool> never{false};
    for (auto _ : state) benchmark::DoNotOptimize(spin_until([&] { return never.load(std::memory_order_relaxed); }));
}
BENCHMARK(BM_SpinUntilBudget)->Unit(benchmark::kMicrosecond);

// A decode step issues hundreds of short loops back to back: their cost with the workers spinning between them.
void BM_ShortParallelLoops(benchmark::State& state) {
    ThreadPool pool(2);
    std::atomic<int64_t> sink{0};
    for (auto _ : state) {
        pool.parallel_for(64, [&](int64_t begin, int64_t end, int) { sink.fetch_add(end - begin); });
    }
    benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_ShortParallelLoops)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tern

BENCHMARK_MAIN();
