// Memory bandwidth probes: a read-only vectorised sum (what decode does with weights) and the STREAM triad.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "kernels/kernels.h"
#include "model_bench/model_bench.h"
#include "model_bench/timing.h"

namespace tern {
namespace {

struct FreeDeleter {
    void operator()(float* pointer) const { std::free(pointer); }
};
using FloatArray = std::unique_ptr<float[], FreeDeleter>;

FloatArray make_array(int64_t count, float value) {
    auto* memory = static_cast<float*>(std::aligned_alloc(64, static_cast<size_t>((count * 4 + 63) / 64 * 64)));
    for (int64_t idx = 0; idx < count; ++idx) memory[idx] = value;  // touch every page before timing
    return FloatArray(memory);
}

}  // namespace

MemoryBandwidth measure_memory_bandwidth(ThreadPool& pool, int64_t num_bytes, int repetitions) {
    const int64_t count = num_bytes / 4;
    FloatArray a = make_array(count, 0.0f), b = make_array(count, 1.0f), c = make_array(count, 2.0f);
    const kernels::KernelTable& table = kernels::kernels();
    std::vector<double> partial(static_cast<size_t>(pool.num_threads()));
    MemoryBandwidth result;
    volatile double sink = 0.0;  // keeps the sums from being optimised away
    for (int repetition = 0; repetition < repetitions; ++repetition) {
        const double read_seconds = timed_seconds([&] {
            pool.parallel_for(count, [&](int64_t begin, int64_t end, int thread_idx) {
                partial[static_cast<size_t>(thread_idx)] = table.sum_f32(b.get() + begin, end - begin);
            });
        });
        for (double value : partial) sink = sink + value;
        result.read_gb_per_s.samples.push_back(static_cast<double>(count) * 4 / read_seconds / 1e9);
        const float scalar = 3.0f;
        const double triad_seconds = timed_seconds([&] {
            pool.parallel_for(count, [&](int64_t begin, int64_t end, int) {
                float* out = a.get();
                const float* left = b.get();
                const float* right = c.get();
                for (int64_t idx = begin; idx < end; ++idx) out[idx] = left[idx] + scalar * right[idx];
            });
        });
        result.triad_gb_per_s.samples.push_back(static_cast<double>(count) * 12 / triad_seconds / 1e9);
    }
    return result;
}

}  // namespace tern
