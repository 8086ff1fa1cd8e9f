// Every ISA's RMSNorm and SwiGLU against a float64 computation, on odd lengths and large-magnitude inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernels.h"

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

}  // namespace
}  // namespace tern::kernels
