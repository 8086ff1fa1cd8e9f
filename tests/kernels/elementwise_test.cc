// Every ISA's RMSNorm, SwiGLU and RoPE against a float64 computation, on odd lengths and large-magnitude inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"

namespace tern::kernels {
namespace {

std::vector<float> random_values(size_t count, uint32_t seed, float scale) {
    std::mt19937 generator(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> values(count);
    for (float& value : values) value = normal(generator);
    return values;
}

TEST(Elementwise, RmsNormAndSiluMulMatchFloat64OnEveryIsa) {
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
        const KernelTable* table = kernel_table(isa);
        if (table == nullptr) continue;
        for (int64_t length : {1, 15, 16, 17, 64, 2048, 5633}) {
            SCOPED_TRACE(::testing::Message() << isa_name(isa) << " length " << length);
            const auto x = random_values(static_cast<size_t>(length), 1, 3.0f);
            const auto weight = random_values(static_cast<size_t>(length), 2, 1.0f);
            std::vector<float> normed(static_cast<size_t>(length));
            table->rms_norm(x.data(), weight.data(), length, 1e-5f, normed.data());
            double sum_squares = 0.0;
            for (float value : x) sum_squares += static_cast<double>(value) * value;
            const double inv_rms = 1.0 / std::sqrt(sum_squares / static_cast<double>(length) + 1e-5);
            const auto gate = random_values(static_cast<size_t>(length), 3, 8.0f);  // reaches exp's clamps
            const auto up = random_values(static_cast<size_t>(length), 4, 1.0f);
            std::vector<float> swiglu(static_cast<size_t>(length));
            table->silu_mul(gate.data(), up.data(), length, swiglu.data());
            for (size_t idx = 0; idx < static_cast<size_t>(length); ++idx) {
                EXPECT_NEAR(normed[idx], x[idx] * inv_rms * weight[idx], 1e-5 * (1.0 + std::abs(normed[idx])));
                const double g = gate[idx];
                const double expected = g / (1.0 + std::exp(-g)) * up[idx];
                EXPECT_NEAR(swiglu[idx], expected, 1e-5 * (1.0 + std::abs(expected)));
            }
        }
    }
}

// GeGLU in GELU's tanh form (Gemma), gates out to where tanh saturates.
TEST(Elementwise, GeluMulMatchesFloat64OnEveryIsa) {
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
        const KernelTable* table = kernel_table(isa);
        if (table == nullptr) continue;
        for (int64_t length : {1, 7, 8, 15, 16, 17, 64, 5633}) {
            SCOPED_TRACE(::testing::Message() << isa_name(isa) << " length " << length);
            const auto gate = random_values(static_cast<size_t>(length), 5, 12.0f);
            const auto up = random_values(static_cast<size_t>(length), 6, 1.0f);
            std::vector<float> geglu(static_cast<size_t>(length));
            table->gelu_mul(gate.data(), up.data(), length, geglu.data());
            for (size_t idx = 0; idx < static_cast<size_t>(length); ++idx) {
                const double g = gate[idx];
                const double gelu = 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
                const double expected = gelu * up[idx];
                EXPECT_NEAR(geglu[idx], expected, 2e-6 * (1.0 + std::abs(g * up[idx])));
            }
        }
    }
}

// Both pair orders, rope_dim from one pair to past two vectors, and a rope_dim below the head size (partial
// rotary): the elements past rope_dim stay as they were.
TEST(Elementwise, RopeMatchesFloat64OnEveryIsa) {
    constexpr int64_t kHeadDim = 160;
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
        const KernelTable* table = kernel_table(isa);
        if (table == nullptr) continue;
        for (bool pair_halves : {false, true}) {
            for (int64_t rope_dim : {2, 6, 8, 14, 16, 30, 32, 34, 64, 100, 128, 160}) {
                SCOPED_TRACE(::testing::Message() << isa_name(isa) << (pair_halves ? " halves" : " adjacent")
                                                  << " rope_dim " << rope_dim);
                const auto original = random_values(kHeadDim, 5, 2.0f);
                const auto angles = random_values(static_cast<size_t>(rope_dim / 2), 6, 3.0f);
                std::vector<float> cos_table, sin_table;
                for (float angle : angles) {
                    cos_table.push_back(std::cos(angle));
                    sin_table.push_back(std::sin(angle));
                }
                std::vector<float> head = original;
                table->rope(head.data(), rope_dim, cos_table.data(), sin_table.data(), pair_halves);
                std::vector<double> expected(original.begin(), original.end());
                for (int64_t pair = 0; pair < rope_dim / 2; ++pair) {
                    const size_t first = static_cast<size_t>(pair_halves ? pair : 2 * pair);
                    const size_t second = static_cast<size_t>(pair_halves ? pair + rope_dim / 2 : 2 * pair + 1);
                    const double c = cos_table[static_cast<size_t>(pair)], s = sin_table[static_cast<size_t>(pair)];
                    expected[first] = original[first] * c - original[second] * s;
                    expected[second] = original[first] * s + original[second] * c;
                }
                for (size_t idx = 0; idx < head.size(); ++idx) {
                    EXPECT_NEAR(head[idx], expected[idx], 1e-6 * (1.0 + std::abs(expected[idx]))) << "element " << idx;
                }
                // Bit for bit the reference's rounding, so that greedy outputs do not depend on the ISA.
                std::vector<float> reference = original;
                ref::rope(reference.data(), rope_dim, cos_table.data(), sin_table.data(), pair_halves);
                EXPECT_EQ(head, reference);
            }
        }
    }
}

}  // namespace
}  // namespace tern::kernels
