// Every ISA's grouped-query attention over a paged KV cache against a float64 softmax: f32, f16 and q8_0 rows,
// blocks scattered in memory, odd key counts and several head sizes and block sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "kernels/kernels.h"
#include "quant/quantize.h"

namespace tern::kernels {
namespace {

struct AttentionShape {
    int64_t num_heads;
    int64_t head_dim;
    int64_t num_keys;
    int64_t block_size;
};

std::vector<float> random_values(size_t count, uint32_t seed, float scale) {
    std::mt19937 generator(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> values(count);
    for (float& value : values) value = normal(generator);
    return values;
}

// Cached rows of one KV head, stored in `type` in blocks whose order in memory is shuffled.
struct PagedRows {
    std::vector<uint8_t> storage;
    std::vector<const uint8_t*> key_blocks, value_blocks;
    std::vector<float> keys, values;  // what the rows hold after rounding to `type`, as floats
    PagedKv kv;

    PagedRows(KvType type, int64_t head_dim, int64_t num_keys, int64_t block_size, uint32_t seed) {
        const int64_t row_stride = kv_row_bytes(type, head_dim) + 6;  // other heads' bytes sit between rows
        const int64_t num_blocks = (num_keys + block_size - 1) / block_size;
        const int64_t block_bytes = 2 * block_size * row_stride;
        storage.resize(static_cast<size_t>(num_blocks * block_bytes));
        std::vector<int64_t> order(static_cast<size_t>(num_blocks));
        for (int64_t idx = 0; idx < num_blocks; ++idx) order[static_cast<size_t>(idx)] = idx;
        std::shuffle(order.begin(), order.end(), std::mt19937(seed));
        for (int64_t block : order) {
            key_blocks.push_back(storage.data() + block * block_bytes);
            value_blocks.push_back(storage.data() + block * block_bytes + block_size * row_stride);
        }
        // Large-magnitude keys make some scores dominate, which exercises the running-max rescaling.
        const auto raw_keys = random_values(static_cast<size_t>(num_keys * head_dim), seed + 1, 3.0f);
        const auto raw_values = random_values(static_cast<size_t>(num_keys * head_dim), seed + 2, 1.0f);
        kv = PagedKv{key_blocks.data(), value_blocks.data(), block_size, row_stride, type};
        keys.resize(raw_keys.size());
        values.resize(raw_values.size());
        for (int64_t position = 0; position < num_keys; ++position) {
            auto* key_row = const_cast<uint8_t*>(kv.key_row(position));
            auto* value_row = const_cast<uint8_t*>(kv.value_row(position));
            store(type, raw_keys.data() + position * head_dim, head_dim, key_row);
            store(type, raw_values.data() + position * head_dim, head_dim, value_row);
            load_kv_row(type, key_row, head_dim, keys.data() + position * head_dim);
            load_kv_row(type, value_row, head_dim, values.data() + position * head_dim);
        }
    }

    static void store(KvType type, const float* row, int64_t length, uint8_t* out) {
        if (type == KvType::kF32) std::copy_n(row, length, reinterpret_cast<float*>(out));
        if (type == KvType::kF16) {
            for (int64_t idx = 0; idx < length; ++idx) reinterpret_cast<uint16_t*>(out)[idx] = fp32_to_fp16(row[idx]);
        }
        if (type == KvType::kQ8_0) quantize_row_q8_0(row, reinterpret_cast<BlockQ8_0*>(out), length);
    }
};

double max_error_against_float64(const std::vector<float>& q, const PagedRows& rows, const AttentionShape& shape,
                                 const AttentionScoring& scoring, const std::vector<float>& out) {
    double max_error = 0.0;
    // Written from the definition, not from first_key(): the window keeps keys with query - key < window, where
    // the query sits at position num_keys - 1.
    const int64_t first_key = scoring.window > 0 ? std::max<int64_t>(0, shape.num_keys - scoring.window) : 0;
    for (int64_t head = 0; head < shape.num_heads; ++head) {
        std::vector<double> logits(static_cast<size_t>(shape.num_keys), 0.0);
        double max_logit = -1e300;
        for (int64_t key = first_key; key < shape.num_keys; ++key) {
            double dot = 0.0;
            for (int64_t dim = 0; dim < shape.head_dim; ++dim) {
                dot += static_cast<double>(q[head * shape.head_dim + dim]) * rows.keys[key * shape.head_dim + dim];
            }
            logits[key] = dot * scoring.scale;
            if (scoring.softcap > 0) logits[key] = scoring.softcap * std::tanh(logits[key] / scoring.softcap);
            max_logit = std::max(max_logit, logits[key]);
        }
        double total = 0.0;
        for (int64_t key = first_key; key < shape.num_keys; ++key) total += (logits[key] = std::exp(logits[key] - max_logit));
        for (int64_t dim = 0; dim < shape.head_dim; ++dim) {
            double expected = 0.0;
            for (int64_t key = first_key; key < shape.num_keys; ++key) {
                expected += logits[key] / total * rows.values[key * shape.head_dim + dim];
            }
            max_error = std::max(max_error, std::abs(expected - out[head * shape.head_dim + dim]));
        }
    }
    return max_error;
}

// Plain scores, Gemma 2's soft cap (small enough to bend these scores), a sliding window shorter than most
// shapes' keys, and both.
std::vector<AttentionScoring> scorings(int64_t head_dim) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    return {{scale, 0.0f, 0}, {scale, 1.5f, 0}, {scale, 0.0f, 7}, {scale, 1.5f, 20}};
}

TEST(Attention, EveryIsaAndKvTypeMatchesFloat64Softmax) {
    const AttentionShape shapes[] = {{1, 64, 1, 16},   {8, 64, 17, 16}, {7, 64, 100, 16}, {4, 128, 33, 5},
                                     {2, 8, 5, 16},    {16, 64, 300, 16}, {3, 32, 16, 16}, {2, 64, 40, 64},
                                     {1, 32, 23, 1}};
    int num_isas = 0;
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
        const KernelTable* table = kernel_table(isa);
        if (table == nullptr) continue;
        ++num_isas;
        for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
            for (const AttentionShape& shape : shapes) {
                if (type == KvType::kQ8_0 && shape.head_dim % 32 != 0) continue;
                SCOPED_TRACE(::testing::Message() << isa_name(isa) << " type " << int(type) << " heads "
                                                  << shape.num_heads << " dim " << shape.head_dim << " keys "
                                                  << shape.num_keys << " block " << shape.block_size);
                const PagedRows rows(type, shape.head_dim, shape.num_keys, shape.block_size, 7);
                const auto q = random_values(static_cast<size_t>(shape.num_heads * shape.head_dim), 1, 1.0f);
                std::vector<float> out(static_cast<size_t>(shape.num_heads * shape.head_dim));
                std::vector<float> scratch(static_cast<size_t>(shape.num_keys + 2 * shape.head_dim));
                for (const AttentionScoring& scoring : scorings(shape.head_dim)) {
                    SCOPED_TRACE(::testing::Message() << "softcap " << scoring.softcap << " window " << scoring.window);
                    table->attention_group(q.data(), shape.head_dim, shape.num_heads, rows.kv, shape.num_keys,
                                           shape.head_dim, scoring, out.data(), shape.head_dim, scratch.data());
                    // Against the same rounded rows, so only the kernel's arithmetic is measured.
                    EXPECT_LT(max_error_against_float64(q, rows, shape, scoring, out), 2e-5);
                }
            }
        }
    }
    EXPECT_GE(num_isas, 1);
}

// A prefill chunk's queries through attention_queries get exactly the bits each gets from attention_group alone
// (so results do not depend on how prompts are chunked): head counts on both sides of the lane kernels' 4 (four
// queries at a time) and 5-8 (two), chunks that start inside a block and end on one, block sizes that split the
// 16-row tiles, every KV type.
TEST(Attention, QueriesOfAChunkEqualEachQueryAlone) {
    struct ChunkShape {
        int64_t num_heads, head_dim, first_num_keys, num_queries, block_size;
    };
    const ChunkShape shapes[] = {{8, 64, 1, 7, 16},  {8, 64, 15, 4, 16}, {7, 64, 30, 5, 16}, {8, 128, 16, 33, 16},
                                 {5, 64, 3, 6, 5},   {4, 64, 10, 5, 16}, {2, 32, 1, 3, 16},  {14, 64, 20, 4, 16},
                                 {8, 64, 47, 2, 1},  {6, 32, 1, 1, 16},  {4, 128, 16, 11, 16}, {4, 64, 1, 8, 5},
                                 {4, 64, 29, 4, 16}, {3, 64, 5, 6, 16}};
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
        const KernelTable* table = kernel_table(isa);
        if (table == nullptr) continue;
        for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
            for (const ChunkShape& shape : shapes) {
                if (type == KvType::kQ8_0 && shape.head_dim % 32 != 0) continue;
                SCOPED_TRACE(::testing::Message() << isa_name(isa) << " type " << int(type) << " heads "
                                                  << shape.num_heads << " dim " << shape.head_dim << " first keys "
                                                  << shape.first_num_keys << " queries " << shape.num_queries
                                                  << " block " << shape.block_size);
                const int64_t num_keys = shape.first_num_keys + shape.num_queries - 1;
                const PagedRows rows(type, shape.head_dim, num_keys, shape.block_size, 11);
                // Tokens a q_dim apart (other KV heads' queries between them), heads a head_dim apart.
                const int64_t token_stride = 3 * shape.num_heads * shape.head_dim;
                const auto q = random_values(static_cast<size_t>(shape.num_queries * token_stride), 2, 1.0f);
                const size_t out_size = static_cast<size_t>(shape.num_queries * token_stride);
                std::vector<float> together(out_size, 0.0f), alone(out_size, 0.0f);
                std::vector<float> scratch(static_cast<size_t>(num_keys + 2 * shape.head_dim));
                // Windows that slide inside the chunk (pairs of queries with different first keys) and soft caps.
                for (const AttentionScoring& scoring : scorings(shape.head_dim)) {
                    SCOPED_TRACE(::testing::Message() << "softcap " << scoring.softcap << " window " << scoring.window);
                    const AttentionQueries queries{q.data(), token_stride, shape.head_dim, shape.num_heads,
                                                   shape.num_queries, shape.first_num_keys, together.data(),
                                                   token_stride, shape.head_dim};
                    table->attention_queries(queries, rows.kv, shape.head_dim, scoring, scratch.data());
                    for (int64_t query = 0; query < shape.num_queries; ++query) {
                        table->attention_group(q.data() + query * token_stride, shape.head_dim, shape.num_heads,
                                               rows.kv, shape.first_num_keys + query, shape.head_dim, scoring,
                                               alone.data() + query * token_stride, shape.head_dim, scratch.data());
                    }
                    EXPECT_EQ(together, alone);
                }
            }
        }
    }
}

}  // namespace
}  // namespace tern::kernels
