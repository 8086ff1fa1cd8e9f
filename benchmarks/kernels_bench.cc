// Kernel micro-benchmarks: each matmul on each ISA the CPU has, single-threaded, for one token (decode: GB/s of
// weights streamed) and 16 tokens (prefill / batched decode: GOP/s), plus attention over 512 cached positions.
// `shape/...` runs the repacked int8 matmuls on TinyLlama-1.1B's matrices (rows x row length: q/o 2048x2048,
// gate/up 5632x2048, down 2048x5632, output 32000x2048) at 1..512 tokens: decode, batched decode and prefill.
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "base/fp16.h"
#include "kernels/kernels.h"
#include "model/kv_cache.h"
#include "quant/quantize.h"

namespace tern::kernels {
namespace {

struct Fixture {
    std::vector<uint8_t> bytes;
    PackedWeights weights;
    std::vector<float> x;
    Activations activations;
    std::vector<float> y;
    std::vector<float> scratch;
};

std::vector<float> random_values(int64_t count) {
    std::mt19937 generator(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(static_cast<size_t>(count));
    for (float& value : values) value = normal(generator);
    return values;
}

// Cached rows of `values` (rows of 64) in the KV element type.
std::vector<uint8_t> kv_rows(const std::vector<float>& values, KvType type) {
    if (type == KvType::kQ8_0) {
        std::vector<uint8_t> bytes(values.size() / 32 * sizeof(BlockQ8_0));
        quantize_row_q8_0(values.data(), reinterpret_cast<BlockQ8_0*>(bytes.data()),
                          static_cast<int64_t>(values.size()));
        return bytes;
    }
    std::vector<uint8_t> bytes(values.size() * (type == KvType::kF32 ? 4 : 2));
    for (size_t i = 0; i < values.size(); ++i) {
        if (type == KvType::kF32) {
            std::memcpy(bytes.data() + 4 * i, &values[i], 4);
        } else {
            const uint16_t half = fp32_to_fp16(values[i]);
            std::memcpy(bytes.data() + 2 * i, &half, 2);
        }
    }
    return bytes;
}

// Quantizing and packing a 32000-row matrix takes seconds: each (type, shape) is built once per process.
Fixture& weights_fixture(DType type, int64_t rows, int64_t length) {
    static std::map<std::tuple<DType, int64_t, int64_t>, Fixture> fixtures;
    Fixture& fixture = fixtures[{type, rows, length}];
    if (fixture.bytes.empty()) {
        const int64_t stride = row_bytes(type, length);
        fixture.bytes.resize(static_cast<size_t>(stride * rows));
        const std::vector<float> values = random_values(rows * length);
        quantize_rows(type, values.data(), fixture.bytes.data(), rows, length);
        fixture.weights = pack_weights(MatrixView{type, fixture.bytes.data(), length, rows, stride});
    }
    return fixture;
}

void bench_matmul(benchmark::State& state, Isa isa, DType type, int64_t rows, int64_t length, int64_t num_tokens) {
    const KernelTable* table = kernel_table(isa);
    if (table == nullptr) {
        state.SkipWithError("ISA not supported on this CPU");
        return;
    }
    Fixture& fixture = weights_fixture(type, rows, length);
    const int64_t stride = fixture.weights.view.row_stride;
    fixture.x = random_values(num_tokens * length);
    fixture.y.resize(static_cast<size_t>(num_tokens * rows));
    fixture.scratch.resize(static_cast<size_t>(length));
    for (auto _ : state) {
        prepare_activations(*table, fixture.x.data(), num_tokens, length, length,
                            needs_q8_activations(fixture.weights), &fixture.activations);
        matmul(*table, fixture.weights, fixture.activations, 0, fixture.weights.num_work_units(), fixture.y.data(), rows,
               fixture.scratch.data());
        benchmark::DoNotOptimize(fixture.y.data());
    }
    state.SetBytesProcessed(state.iterations() * stride * rows);
    state.counters["GOP/s"] = benchmark::Counter(static_cast<double>(2 * rows * length * num_tokens) * state.iterations(),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// A mixture-of-experts decode step as Qwen3-30B-A3B's layers meet it: 128 experts' 768 x 2048 matrices (113 MB at
// Q4_K, beyond L3), 8 of them chosen per token, one token each. Each expert is small (48 row groups), so the
// prefetcher meets many short streams; GB/s counts the chosen experts' bytes.
void bench_experts_from_memory(benchmark::State& state, Isa isa, DType type) {
    const KernelTable* table = kernel_table(isa);
    if (table == nullptr) {
        state.SkipWithError("ISA not supported on this CPU");
        return;
    }
    constexpr int64_t kExperts = 128, kUsed = 8, kRows = 768, kLength = 2048;
    const Fixture& one = weights_fixture(type, kRows, kLength);
    std::vector<PackedWeights> experts;
    for (int64_t expert = 0; expert < kExperts; ++expert) experts.push_back(pack_weights(one.weights.view));
    const std::vector<float> x = random_values(kLength);
    std::vector<float> y(static_cast<size_t>(kRows)), scratch(static_cast<size_t>(kLength));
    Activations activations;
    uint32_t state_bits = 7;
    for (auto _ : state) {
        prepare_activations(*table, x.data(), 1, kLength, kLength, needs_q8_activations(experts[0]), &activations);
        for (int64_t used = 0; used < kUsed; ++used) {
            state_bits = state_bits * 1664525u + 1013904223u;
            const PackedWeights& expert = experts[(state_bits >> 16) % kExperts];
            matmul(*table, expert, activations, 0, expert.num_work_units(), y.data(), kRows, scratch.data());
        }
        benchmark::DoNotOptimize(y.data());
    }
    state.SetBytesProcessed(state.iterations() * kUsed * one.weights.view.row_stride * kRows);
}

// 8 query heads sharing one KV head, head dim 64, f32, f16 (the serving default) or q8_0 rows in blocks of 16 positions
// as the model's paged cache holds them: one query over 512 cached positions, or (num_queries > 1) a prefill chunk of
// that many queries ending there, through attention_queries.
void bench_attention(benchmark::State& state, Isa isa, int64_t num_queries, KvType kv_type) {
    const KernelTable* table = kernel_table(isa);
    if (table == nullptr) {
        state.SkipWithError("ISA not supported on this CPU");
        return;
    }
    const int64_t heads = 8, head_dim = 64, keys = 512;
    const std::vector<float> q = random_values(num_queries * heads * head_dim);
    const std::vector<uint8_t> k = kv_rows(random_values(keys * head_dim), kv_type);
    const std::vector<uint8_t> v = kv_rows(random_values(keys * head_dim), kv_type);
    const int64_t row_bytes = kv_row_bytes(kv_type, head_dim);
    std::vector<float> out(static_cast<size_t>(num_queries * heads * head_dim));
    std::vector<float> scratch(static_cast<size_t>(keys + 2 * head_dim));
    std::vector<const uint8_t*> key_blocks, value_blocks;
    for (int64_t first = 0; first < keys; first += 16) {
        key_blocks.push_back(k.data() + first * row_bytes);
        value_blocks.push_back(v.data() + first * row_bytes);
    }
    const PagedKv kv{key_blocks.data(), value_blocks.data(), 16, row_bytes, kv_type};
    const int64_t first_num_keys = keys - num_queries + 1;
    const AttentionQueries queries{q.data(), heads * head_dim, head_dim, heads, num_queries, first_num_keys,
                                   out.data(), heads * head_dim, head_dim};
    for (auto _ : state) {
        if (num_queries == 1) {
            table->attention_group(q.data(), head_dim, heads, kv, keys, head_dim, {0.125f}, out.data(), head_dim,
                                   scratch.data());
        } else {
            table->attention_queries(queries, kv, head_dim, {0.125f}, scratch.data());
        }
        benchmark::DoNotOptimize(out.data());
    }
    const double keys_read = static_cast<double>(num_queries * first_num_keys + num_queries * (num_queries - 1) / 2);
    state.counters["GFLOP/s"] = benchmark::Counter(4.0 * heads * head_dim * keys_read * state.iterations(),
                                                   benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// Decode attention as a long-context batched step meets it: many (sequence, KV head) units of 1024 cached positions
// each, 64 MiB of f16 cache in all, far beyond L2 and L3, in the model's own paged cache (model/kv_cache.h). Each
// sequence's 64 blocks are either consecutive ids, as a prompt's blocks are allocated together, or scattered over
// the pool, as blocks taken one at a time by many decoding sequences are; either way each unit's keys and values
// come from memory.
void bench_attention_from_memory(benchmark::State& state, Isa isa, bool consecutive_blocks) {
    const KernelTable* table = kernel_table(isa);
    if (table == nullptr) {
        state.SkipWithError("ISA not supported on this CPU");
        return;
    }
    constexpr int64_t kHeads = 8, kHeadDim = 64, kKeys = 1024, kKvHeads = 4, kSequences = 64, kBlock = 16;
    HParams hparams;
    hparams.num_layers = 1;
    hparams.num_heads = kHeads * kKvHeads;
    hparams.num_kv_heads = kKvHeads;
    hparams.head_dim = kHeadDim;
    const int64_t blocks_per_sequence = kKeys / kBlock, num_blocks = kSequences * blocks_per_sequence;
    const std::unique_ptr<KvCache> cache = KvCache::create_paged(hparams, num_blocks, kBlock, KvType::kF16).value();
    std::vector<uint16_t> row(kHeadDim);
    std::mt19937 generator(7);
    std::normal_distribution<float> normal;
    for (int64_t block = 0; block < num_blocks; ++block) {
        for (int64_t kv_head = 0; kv_head < kKvHeads; ++kv_head) {
            for (int64_t position = 0; position < kBlock; ++position) {
                for (uint16_t& value : row) value = fp32_to_fp16(normal(generator));
                std::memcpy(cache->key_slice(0, block, kv_head, position), row.data(), 2 * kHeadDim);
                for (uint16_t& value : row) value = fp32_to_fp16(normal(generator));
                std::memcpy(cache->value_slice(0, block, kv_head, position), row.data(), 2 * kHeadDim);
            }
        }
    }
    std::vector<int64_t> order(static_cast<size_t>(num_blocks));
    for (int64_t idx = 0; idx < num_blocks; ++idx) {
        order[static_cast<size_t>(idx)] = consecutive_blocks ? idx : idx * 7919 % num_blocks;
    }
    const std::vector<float> q = random_values(kHeads * kHeadDim);
    std::vector<float> out(static_cast<size_t>(kHeads * kHeadDim)), scratch(static_cast<size_t>(kKeys + 2 * kHeadDim));
    std::vector<const uint8_t*> keys(static_cast<size_t>(blocks_per_sequence)), values(keys.size());
    for (auto _ : state) {
        for (int64_t sequence = 0; sequence < kSequences; ++sequence) {
            for (int64_t kv_head = 0; kv_head < kKvHeads; ++kv_head) {
                for (int64_t idx = 0; idx < blocks_per_sequence; ++idx) {
                    const int64_t block = order[static_cast<size_t>(sequence * blocks_per_sequence + idx)];
                    keys[static_cast<size_t>(idx)] = cache->key_slice(0, block, kv_head, 0);
                    values[static_cast<size_t>(idx)] = cache->value_slice(0, block, kv_head, 0);
                }
                const PagedKv kv{keys.data(), values.data(), kBlock, cache->slice_bytes(), KvType::kF16};
                table->attention_group(q.data(), kHeadDim, kHeads, kv, kKeys, kHeadDim, {0.125f}, out.data(), kHeadDim,
                                       scratch.data());
            }
        }
        benchmark::DoNotOptimize(out.data());
    }
    const double units = static_cast<double>(kSequences * kKvHeads * state.iterations());
    state.counters["GFLOP/s"] = benchmark::Counter(4.0 * kHeads * kHeadDim * kKeys * units, benchmark::Counter::kIsRate,
                                                   benchmark::Counter::kIs1000);
    state.counters["GB/s"] = benchmark::Counter(2.0 * kKeys * cache->slice_bytes() * units,
                                                benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void register_all() {
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
        for (DType type : {DType::kQ4_0, DType::kQ8_0, DType::kQ6_K, DType::kQ4_K, DType::kQ5_K, DType::kF16, DType::kBF16, DType::kF32}) {
            for (int64_t tokens : {1, 16}) {
                const std::string name = std::string("matmul/") + isa_name(isa) + "/" + std::string(dtype_name(type)) +
                                         "/tokens:" + std::to_string(tokens);
                // 4096 x 4096: 16M weights, beyond L2 as a layer's matrices are
                benchmark::RegisterBenchmark(name.c_str(), bench_matmul, isa, type, 4096, 4096, tokens)
                    ->Unit(benchmark::kMillisecond);
            }
        }
        const std::pair<int64_t, int64_t> shapes[] = {{2048, 2048}, {5632, 2048}, {2048, 5632}, {32000, 2048}};
        for (DType type : {DType::kQ4_0, DType::kQ8_0, DType::kQ6_K, DType::kQ4_K}) {
            if (isa == Isa::kRef) break;  // the scalar reference would take minutes per 512-token product
            for (auto [rows, length] : shapes) {
                for (int64_t tokens : {1, 4, 16, 64, 512}) {
                    const std::string name = std::string("shape/") + isa_name(isa) + "/" +
                                             std::string(dtype_name(type)) + "/" + std::to_string(rows) + "x" +
                                             std::to_string(length) + "/tokens:" + std::to_string(tokens);
                    benchmark::RegisterBenchmark(name.c_str(), bench_matmul, isa, type, rows, length, tokens)
                        ->Unit(benchmark::kMillisecond);
                }
            }
        }
        for (DType type : {DType::kQ4_K, DType::kQ6_K, DType::kQ8_0}) {
            if (isa == Isa::kRef) break;
            const std::string name = std::string("experts/") + isa_name(isa) + "/" + std::string(dtype_name(type)) +
                                     "/8_of_128x768x2048/from_memory";
            benchmark::RegisterBenchmark(name.c_str(), bench_experts_from_memory, isa, type)
                ->Unit(benchmark::kMicrosecond);
        }
        for (bool consecutive : {true, false}) {
            const std::string name = std::string("attention/") + isa_name(isa) + "/8x64x1024/from_memory/" +
                                     (consecutive ? "consecutive_blocks" : "scattered_blocks");
            benchmark::RegisterBenchmark(name.c_str(), bench_attention_from_memory, isa, consecutive)
                ->Unit(benchmark::kMillisecond);
        }
        for (KvType kv_type : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
            const std::string suffix =
                kv_type == KvType::kF32 ? "" : kv_type == KvType::kF16 ? "/kv:f16" : "/kv:q8_0";
            benchmark::RegisterBenchmark((std::string("attention/") + isa_name(isa) + "/8x64x512" + suffix).c_str(),
                                         bench_attention, isa, 1, kv_type)->Unit(benchmark::kMicrosecond);
            benchmark::RegisterBenchmark(
                (std::string("attention/") + isa_name(isa) + "/8x64x512/queries:16" + suffix).c_str(), bench_attention,
                isa, 16, kv_type)->Unit(benchmark::kMicrosecond);
        }
    }
}

}  // namespace
}  // namespace tern::kernels

int main(int argc, char** argv) {
    tern::kernels::register_all();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
