// In-process model speed, measured as llama-bench does: prefill of a prompt (pp) and decode of single tokens (tg)
// after `depth` cached positions (llama-bench's -d; 0: an empty context), repeated; plus B sequences decoding
// together. Also the machine's memory bandwidth, the
// ceiling that decode speed is judged against.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/model.h"

namespace tern {

struct Measurement {
    std::vector<double> samples;
    double mean() const;
    double stddev() const;  // sample standard deviation; 0 with fewer than two samples
    double median() const;
    double best() const;
};

struct ModelBenchOptions {
    int64_t prompt_tokens = 512;        // pp: tokens prefilled in one pass (0 skips)
    int64_t generated_tokens = 128;     // tg: tokens decoded one at a time (0 skips)
    int repetitions = 5;
    std::vector<int64_t> batch_sizes;   // batched decode: B sequences stepping together, generated_tokens each
    int64_t depth = 0;                  // positions already in the KV cache before each test (untimed prefill)
    KvType kv_type = KvType::kF16;      // as llama-bench's and the engine's default
    uint64_t seed = 1;                  // of the random token ids
    double warmup_seconds = 0.0;        // untimed prefill + decode rounds for at least this long (one at least)
};

struct ModelBenchResult {
    Measurement prefill_tokens_per_s;
    Measurement decode_tokens_per_s;
    std::vector<std::pair<int64_t, Measurement>> batched_tokens_per_s;  // (B, total tokens/s)
};

Result<ModelBenchResult> bench_model(Model& model, ThreadPool& pool, const ModelBenchOptions& options);

struct MemoryBandwidth {
    Measurement read_gb_per_s;   // vectorised read-only sum (bytes read / s)
    Measurement triad_gb_per_s;  // a[i] = b[i] + s * c[i] (bytes read + written / s)
};

// Streams `num_bytes` per array with the pool's threads, `repetitions` times.
MemoryBandwidth measure_memory_bandwidth(ThreadPool& pool, int64_t num_bytes, int repetitions);

struct ComputePeak {
    Measurement int8_gops;    // int8 dot products (vpdpbusd), 10^9 operations/s, a multiply-add = 2
    Measurement fp32_gflops;  // fp32 FMAs
};

// The int8 and fp32 peaks of the pool's threads running at once; an error where the kernels have no probes.
Result<ComputePeak> measure_compute_peak(ThreadPool& pool, int repetitions);

}  // namespace tern
