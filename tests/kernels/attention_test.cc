// Every ISA's grouped-query attention against a float64 softmax; odd key counts and several head sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernels.h"

namespace tern::kernels {
namespace {

struct AttentionShape {
    int64_t num_heads;
    int64_t head_dim;
    int64_t num_keys;
};

std::vector<float> random_values(size_t count, uint32_t seed, float scale) {
    std::mt19937 generator(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> values(count);
    for (float& value : values) value = normal(generator);
    return values;
}

TEST(Attention, EveryIsaMatchesFloat64Softmax) {
    const AttentionShape shapes[] = {{1, 64, 1}, {8, 64, 17}, {7, 64, 100}, {4, 128, 33}, {2, 8, 5},
                                     {16, 64, 300}, {3, 32, 16}};
    int num_isas = 0;
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
        const KernelTable* table = kernel_table(isa);
        if (table == nullptr) continue;
        ++num_isas;
        for (const AttentionShape& shape : shapes) {
            SCOPED_TRACE(::testing::Message() << isa_name(isa) << " heads " << shape.num_heads << " dim "
                                              << shape.head_dim << " keys " << shape.num_keys);
            const int64_t kv_stride = shape.head_dim * 3;  // keys of other KV heads interleave in a real cache
            const auto q = random_values(static_cast<size_t>(shape.num_heads * shape.head_dim), 1, 1.0f);
            // Large-magnitude keys make some scores dominate, which exercises the running-max rescaling.
            const auto k = random_values(static_cast<size_t>(shape.num_keys * kv_stride), 2, 3.0f);
            const auto v = random_values(static_cast<size_t>(shape.num_keys * kv_stride), 3, 1.0f);
            std::vector<float> out(static_cast<size_t>(shape.num_heads * shape.head_dim));
            std::vector<float> scores(static_cast<size_t>(shape.num_keys));
            const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
            table->attention_group(q.data(), shape.head_dim, shape.num_heads, k.data(), v.data(), kv_stride,
                                   shape.num_keys, shape.head_dim, scale, out.data(), shape.head_dim, scores.data());
            double max_error = 0.0;
            for (int64_t head = 0; head < shape.num_heads; ++head) {
                std::vector<double> logits(static_cast<size_t>(shape.num_keys));
                double max_logit = -1e300;
                for (int64_t key = 0; key < shape.num_keys; ++key) {
                    double dot = 0.0;
                    for (int64_t dim = 0; dim < shape.head_dim; ++dim) {
                        dot += static_cast<double>(q[head * shape.head_dim + dim]) * k[key * kv_stride + dim];
                    }
                    logits[key] = dot * scale;
                    max_logit = std::max(max_logit, logits[key]);
                }
                double total = 0.0;
                for (double& logit : logits) total += (logit = std::exp(logit - max_logit));
                for (int64_t dim = 0; dim < shape.head_dim; ++dim) {
                    double expected = 0.0;
                    for (int64_t key = 0; key < shape.num_keys; ++key) {
                        expected += logits[key] / total * v[key * kv_stride + dim];
                    }
                    max_error = std::max(max_error, std::abs(expected - out[head * shape.head_dim + dim]));
                }
            }
            EXPECT_LT(max_error, 2e-5);
        }
    }
    EXPECT_GE(num_isas, 1);
}

}  // namespace
}  // namespace tern::kernels
