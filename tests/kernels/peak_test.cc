// The compute-ceiling probes run the instructions they claim: their results equal the arithmetic done by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/kernels.h"

namespace tern::kernels {
namespace {

const KernelTable* avx512_table() {
    const KernelTable* table = kernel_table(Isa::kAvx512);
    return table != nullptr && table->int8_dot_peak_loop != nullptr ? table : nullptr;
}

TEST(PeakProbe, Int8LoopAddsEveryDotProduct) {
    const KernelTable* table = avx512_table();
    if (table == nullptr) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
    // Chain c starts at c in each of 16 lanes; each vpdpbusd adds 4 * (1 * -1).
    double expected = 0.0;
    for (int chain = 0; chain < kPeakChains; ++chain) expected += 16.0 * (chain + 10 * -4);
    EXPECT_EQ(table->int8_dot_peak_loop(10), expected);
    EXPECT_EQ(table->int8_ops_per_instruction, 128);
}

TEST(PeakProbe, Fp32LoopRunsEveryFma) {
    const KernelTable* table = avx512_table();
    if (table == nullptr) GTEST_SKIP() << "no AVX-512 on this CPU";
    double expected = 0.0;
    for (int chain = 0; chain < kPeakChains; ++chain) {
        float value = static_cast<float>(chain);
        for (int iteration = 0; iteration < 3; ++iteration) value = std::fma(value, 0.999f, 0.001f);
        expected += 16.0 * value;
    }
    EXPECT_NEAR(table->fp32_fma_peak_loop(3), expected, 1e-3);
    EXPECT_EQ(kernel_table(Isa::kRef)->int8_dot_peak_loop, nullptr);
}

}  // namespace
}  // namespace tern::kernels
