// Edge cases of base/fp16.h, which every quantized scale goes through.
#include "base/fp16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tern {
namespace {

float bits(uint32_t value) { return fp32_from_bits(value); }

TEST(Fp16Test, ExactValues) {
    EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
    EXPECT_EQ(fp32_to_fp16(-2.0f), 0xC000);
    EXPECT_EQ(fp32_to_fp16(0.5f), 0x3800);
    EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);                  // largest finite half
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -14)), 0x0400);     // smallest normal
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);     // smallest subnormal
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1023.0f, -24)), 0x03FF);  // largest subnormal
    EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
    EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);

    EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
    EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
    EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
    EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));
    EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(fp16_to_fp32(0x8001), -std::ldexp(1.0f, -24));
    EXPECT_EQ(fp16_to_fp32(0x03FF), std::ldexp(1023.0f, -24));
    EXPECT_EQ(fp16_to_fp32(0x0200), std::ldexp(1.0f, -15));
    EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
    EXPECT_EQ(fp16_to_fp32(0x8000), 0.0f);
}

TEST(Fp16Test, InfinityAndNan) {
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(fp32_to_fp16(inf), 0x7C00);
    EXPECT_EQ(fp32_to_fp16(-inf), 0xFC00);
    EXPECT_EQ(fp16_to_fp32(0x7C00), inf);
    EXPECT_EQ(fp16_to_fp32(0xFC00), -inf);
    // Overflow: 65520 is exactly halfway between 65504 and 2^16, and ties go to the even neighbour, infinity.
    EXPECT_EQ(fp32_to_fp16(65519.996f), 0x7BFF);
    EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);
    EXPECT_EQ(fp32_to_fp16(-1e10f), 0xFC00);
    // NaN stays NaN (never infinity), including a signalling NaN whose payload lives only in the low bits.
    for (uint32_t nan_bits : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FFFFFFFu}) {
        const uint16_t half = fp32_to_fp16(bits(nan_bits));
        EXPECT_EQ(half & 0x7C00, 0x7C00) << std::hex << nan_bits;
        EXPECT_NE(half & 0x03FF, 0) << std::hex << nan_bits;
        EXPECT_EQ(half >> 15, nan_bits >> 31) << std::hex << nan_bits;
    }
    EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
    EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7C01)));
    EXPECT_TRUE(std::isnan(fp16_to_fp32(0xFE00)));
}

TEST(Fp16Test, RoundsHalfToEven) {
    const float ulp = std::ldexp(1.0f, -10);  // spacing of halves in [1, 2)
    EXPECT_EQ(fp32_to_fp16(1.0f + ulp / 2), 0x3C00);                                // tie, 0x3C00 is even
    EXPECT_EQ(fp32_to_fp16(1.0f + 3 * ulp / 2), 0x3C02);                            // tie, 0x3C02 is even
    EXPECT_EQ(fp32_to_fp16(std::nextafter(1.0f + ulp / 2, 2.0f)), 0x3C01);          // just above the tie
    EXPECT_EQ(fp32_to_fp16(std::nextafter(1.0f + 3 * ulp / 2, 0.0f)), 0x3C01);      // just below the tie
    EXPECT_EQ(fp32_to_fp16(-(1.0f + ulp / 2)), 0xBC00);
    // Rounding up the mantissa carries into the exponent: 2 - ulp/4 rounds to 2.
    EXPECT_EQ(fp32_to_fp16(2.0f - ulp / 4), 0x4000);
}

TEST(Fp16Test, SubnormalRounding) {
    const float min_subnormal = std::ldexp(1.0f, -24);
    EXPECT_EQ(fp32_to_fp16(min_subnormal / 2), 0x0000);                              // tie to even zero
    EXPECT_EQ(fp32_to_fp16(std::nextafter(min_subnormal / 2, 1.0f)), 0x0001);
    EXPECT_EQ(fp32_to_fp16(min_subnormal / 4), 0x0000);
    EXPECT_EQ(fp32_to_fp16(3 * min_subnormal / 2), 0x0002);                          // tie between 1 and 2
    EXPECT_EQ(fp32_to_fp16(5 * min_subnormal / 2), 0x0002);                          // tie between 2 and 3
    EXPECT_EQ(fp32_to_fp16(-3 * min_subnormal / 2), 0x8002);
    // Largest subnormal plus half a step: tie between 0x03FF and 0x0400, and the even one is the smallest normal.
    EXPECT_EQ(fp32_to_fp16(1023.5f * min_subnormal), 0x0400);
    EXPECT_EQ(fp32_to_fp16(bits(0x00000001u)), 0x0000);  // float subnormals are far below any half
    EXPECT_EQ(fp32_to_fp16(bits(0x80000001u)), 0x8000);
}

TEST(Fp16Test, EveryHalfRoundTrips) {
    for (uint32_t h = 0; h <= 0xFFFF; ++h) {
        const auto half = static_cast<uint16_t>(h);
        const float value = fp16_to_fp32(half);
        if (std::isnan(value)) {
            EXPECT_EQ(h & 0x7C00, 0x7C00u);
            EXPECT_NE(h & 0x03FF, 0u);
            EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(value))));
            continue;
        }
        ASSERT_EQ(fp32_to_fp16(value), half) << std::hex << h;
    }
}

TEST(Fp16Test, HalvesAreOrderedAndSpacedCorrectly) {
    // Positive finite halves in bit order must increase, each one exactly one step above the previous.
    for (uint32_t h = 1; h < 0x7C00; ++h) {
        const float previous = fp16_to_fp32(static_cast<uint16_t>(h - 1));
        const float current = fp16_to_fp32(static_cast<uint16_t>(h));
        const int exponent = std::max(static_cast<int>((h - 1) >> 10), 1) - 15 - 10;  // step above h - 1
        ASSERT_EQ(current - previous, std::ldexp(1.0f, exponent)) << std::hex << h;
    }
}

#if defined(__FLT16_MANT_DIG__)
// The compiler's _Float16 conversion is an independent, correctly rounded implementation.
TEST(Fp16Test, MatchesCompilerFloat16OnSampledFloats) {
    for (uint64_t pattern = 0; pattern <= 0xFFFFFFFFull; pattern += 997) {
        const float value = bits(static_cast<uint32_t>(pattern));
        if (std::isnan(value)) continue;
        const auto expected_half = static_cast<_Float16>(value);
        uint16_t expected = 0;
        std::memcpy(&expected, &expected_half, sizeof(expected));
        ASSERT_EQ(fp32_to_fp16(value), expected) << std::hex << pattern;
    }
}
#endif

TEST(Bf16Test, ExactValuesAndConversionBack) {
    EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(fp32_to_bf16(-3.0f), 0xC040);
    EXPECT_EQ(fp32_to_bf16(0.0f), 0x0000);
    EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
    EXPECT_EQ(bf16_to_fp32(0x3F80), 1.0f);
    EXPECT_EQ(bf16_to_fp32(0xC040), -3.0f);
    EXPECT_EQ(bf16_to_fp32(0x0001), bits(0x00010000u));  // bf16 subnormals are float subnormals
    for (uint32_t h = 0; h <= 0xFFFF; ++h) {
        const float value = bf16_to_fp32(static_cast<uint16_t>(h));
        ASSERT_EQ(fp32_to_bits(value), h << 16);
        if (!std::isnan(value)) {
            ASSERT_EQ(fp32_to_bf16(value), h);
        }
    }
}

TEST(Bf16Test, RoundsHalfToEven) {
    EXPECT_EQ(fp32_to_bf16(bits(0x3F808000u)), 0x3F80);  // tie, even stays
    EXPECT_EQ(fp32_to_bf16(bits(0x3F818000u)), 0x3F82);  // tie, odd rounds up
    EXPECT_EQ(fp32_to_bf16(bits(0x3F808001u)), 0x3F81);
    EXPECT_EQ(fp32_to_bf16(bits(0x3F807FFFu)), 0x3F80);
    EXPECT_EQ(fp32_to_bf16(bits(0x3FFFFFFFu)), 0x4000);  // carry into the exponent
    EXPECT_EQ(fp32_to_bf16(bits(0x00008000u)), 0x0000);  // subnormal tie
    EXPECT_EQ(fp32_to_bf16(bits(0x00018000u)), 0x0002);
    EXPECT_EQ(fp32_to_bf16(bits(0x80018001u)), 0x8002);
}

TEST(Bf16Test, InfinityAndNan) {
    EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
    EXPECT_EQ(fp32_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
    EXPECT_EQ(fp32_to_bf16(bits(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX rounds to infinity
    // A NaN whose payload is only in the low half must not turn into infinity; it comes out quiet.
    EXPECT_EQ(fp32_to_bf16(bits(0x7F800001u)), 0x7FC0);
    EXPECT_EQ(fp32_to_bf16(bits(0xFF800001u)), 0xFFC0);
    EXPECT_EQ(fp32_to_bf16(bits(0x7FC00000u)), 0x7FC0);
    EXPECT_TRUE(std::isnan(bf16_to_fp32(0x7FC0)));
}

}  // namespace
}  // namespace tern
