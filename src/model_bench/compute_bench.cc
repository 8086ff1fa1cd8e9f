// Compute-ceiling probes: every thread runs the kernel table's peak loops (kernels.h) at once, so the figures are
// what the matmul kernels can at best reach with the same thread count.
#include <vector>

#include "kernels/kernels.h"
#include "model_bench/model_bench.h"
#include "model_bench/timing.h"

namespace tern {
namespace {

// About 50-100 ms per probe on a 3 GHz core: long enough to reach full clock, short enough to repeat.
constexpr int64_t kIterations = int64_t{1} << 22;

// Operations per second of `loop` run by every thread of the pool at once.
double timed_peak(ThreadPool& pool, kernels::PeakLoopFn loop, int ops_per_instruction) {
    // One result per unit, summed into a volatile afterwards: keeps the loops from being optimised away without the
    // threads sharing a variable (ThreadSanitizer found the shared sum this had before).
    std::vector<double> results(static_cast<size_t>(pool.num_threads()), 0.0);
    const double seconds = timed_seconds([&] {
        pool.parallel_for(pool.num_threads(), [&](int64_t begin, int64_t end, int) {
            for (int64_t unit = begin; unit < end; ++unit) results[static_cast<size_t>(unit)] += loop(kIterations);
        });
    });
    volatile double sink = 0.0;
    for (double result : results) sink = sink + result;
    return static_cast<double>(pool.num_threads()) * kIterations * kernels::kPeakChains * ops_per_instruction / seconds;
}

}  // namespace

Result<ComputePeak> measure_compute_peak(ThreadPool& pool, int repetitions) {
    const kernels::KernelTable& table = kernels::kernels();
    if (table.int8_dot_peak_loop == nullptr || table.fp32_fma_peak_loop == nullptr) {
        return invalid_argument(std::string("the ") + kernels::isa_name(table.isa) +
                                " kernels have no peak probes (they exist for avx512; run without TERN_ISA)");
    }
    ComputePeak peak;
    for (int repetition = 0; repetition < repetitions; ++repetition) {
        peak.int8_gops.samples.push_back(timed_peak(pool, table.int8_dot_peak_loop, table.int8_ops_per_instruction) / 1e9);
        peak.fp32_gflops.samples.push_back(
            timed_peak(pool, table.fp32_fma_peak_loop, table.fp32_flops_per_instruction) / 1e9);
    }
    return peak;
}

}  // namespace tern
