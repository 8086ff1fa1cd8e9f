#include "quant/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "quant/dequantize.h"

namespace tern {
namespace {

constexpr DType kQuantizable[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0,
                                  DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0,
                                  DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

std::vector<float> normal_data(int64_t n, uint32_t seed, float sigma = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> data(static_cast<size_t>(n));
    for (float& value : data) value = dist(rng);
    return data;
}

// Quantized bytes, kept 8-byte aligned.
struct Quantized {
    std::vector<uint64_t> words;
    uint8_t* bytes() { return reinterpret_cast<uint8_t*>(words.data()); }
};

Quantized quantize(DType type, const std::vector<float>& x) {
    const auto n = static_cast<int64_t>(x.size());
    Quantized q{std::vector<uint64_t>(static_cast<size_t>((row_bytes(type, n) + 7) / 8))};
    quantize_row(type, x.data(), q.bytes(), n);
    return q;
}

std::vector<float> round_trip(DType type, const std::vector<float>& x) {
    Quantized q = quantize(type, x);
    std::vector<float> y(x.size());
    dequantize_row(type, q.bytes(), y.data(), static_cast<int64_t>(x.size()));
    return y;
}

double relative_rmse(const std::vector<float>& x, const std::vector<float>& y) {
    double err = 0.0;
    double ref = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
        err += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
        ref += static_cast<double>(x[i]) * x[i];
    }
    return std::sqrt(err / ref);
}

// Bounds for normal data, from the step each format gives and the uniform-rounding error step / sqrt(12), in units
// of sigma. In a block of 32 the largest |x| is about 2.3 and the range about 4.1; in a group of 16, about 2.0:
//  Q8_0: step 2.3/127 -> 0.0052;  Q6_K: step 2.0/32 -> 0.018;  Q5_0: step 2.3/16 -> 0.042;
//  Q5_1: step 4.1/31 -> 0.038;  Q4_0: step 2.3/8 -> 0.083 (+ clipping at +7);  Q4_1: step 4.1/15 -> 0.079.
// Q5_K and Q4_K use the Q5_1/Q4_1 grids with fitted scales and mins, which do slightly better. The bounds leave
// about 25% headroom; a wrong layout or scale moves values by O(sigma) and gives errors near 1.
struct ErrorBound {
    DType type;
    double max_relative_rmse;
};
constexpr ErrorBound kBounds[] = {
    {DType::kQ8_0, 0.007}, {DType::kQ6_K, 0.022}, {DType::kQ5_0, 0.052}, {DType::kQ5_1, 0.048},
    {DType::kQ5_K, 0.048}, {DType::kQ4_0, 0.105}, {DType::kQ4_1, 0.098}, {DType::kQ4_K, 0.098},
};

TEST(QuantizeTest, RoundTripErrorOnNormalData) {
    const std::vector<float> x = normal_data(256 * 64, 42, 0.02f);
    for (const ErrorBound& bound : kBounds) {
        const double error = relative_rmse(x, round_trip(bound.type, x));
        EXPECT_LT(error, bound.max_relative_rmse) << dtype_name(bound.type);
        // And a real quantization happened: no type beats its format's step by more than 2x.
        EXPECT_GT(error, bound.max_relative_rmse / 3) << dtype_name(bound.type);
    }
}

TEST(QuantizeTest, FloatFormatsBoundRelativeErrorPerElement) {
    const std::vector<float> x = normal_data(4096, 7, 3.0f);
    const std::vector<float> f32 = round_trip(DType::kF32, x);
    const std::vector<float> f16 = round_trip(DType::kF16, x);
    const std::vector<float> bf16 = round_trip(DType::kBF16, x);
    for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(f32[i], x[i]);
        if (std::fabs(x[i]) >= std::ldexp(1.0f, -14)) {  // normal range of half
            ASSERT_LE(std::fabs(f16[i] - x[i]), std::ldexp(std::fabs(x[i]), -11)) << x[i];
        }
        ASSERT_LE(std::fabs(bf16[i] - x[i]), std::ldexp(std::fabs(x[i]), -8)) << x[i];
        ASSERT_EQ(f16[i], fp16_to_fp32(fp32_to_fp16(x[i])));
    }
}

TEST(QuantizeTest, Q8_0ErrorWithinHalfStepPerElement) {
    const std::vector<float> x = normal_data(32 * 64, 3);
    const std::vector<float> y = round_trip(DType::kQ8_0, x);
    for (size_t b = 0; b < x.size() / 32; ++b) {
        float amax = 0.0f;
        for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
        const float step = amax / 127.0f;
        // Half a step from rounding plus 127 times the half-precision error of the stored step.
        const float bound = step * (0.5f + 127.0f * std::ldexp(1.0f, -11));
        for (size_t j = 0; j < 32; ++j) ASSERT_LE(std::fabs(y[32 * b + j] - x[32 * b + j]), bound);
    }
}

TEST(QuantizeTest, Q4_0KnownBytes) {
    // The signed extreme -4 sets d = -4 / -8 = 0.5, so element j quantizes to nibble 2 * x + 8.
    std::vector<float> x(32);
    for (int j = 0; j < 16; ++j) {
        x[j] = (j - 8) * 0.5f;
        x[16 + j] = (7 - j) * 0.5f;
    }
    Quantized q = quantize(DType::kQ4_0, x);
    EXPECT_EQ(q.bytes()[0], 0x00);
    EXPECT_EQ(q.bytes()[1], 0x38);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(q.bytes()[2 + j], j | (15 - j) << 4) << j;
}

TEST(QuantizeTest, Q4_0RoundsHalfUpAndClampsTopLevel) {
    // d = 1 from the extreme -8; x + 8.5 is truncated, so halves round up and +7.6 clamps to nibble 15.
    std::vector<float> x(32, 0.0f);
    x[0] = -8.0f;
    x[1] = 0.5f;
    x[2] = -0.5f;
    x[3] = -1.5f;
    x[4] = 7.4f;
    x[5] = 7.6f;
    Quantized q = quantize(DType::kQ4_0, x);
    EXPECT_EQ(fp16_to_fp32(static_cast<uint16_t>(q.bytes()[0] | q.bytes()[1] << 8)), 1.0f);
    const uint8_t* qs = q.bytes() + 2;
    EXPECT_EQ(qs[0] & 0x0f, 0);
    EXPECT_EQ(qs[1] & 0x0f, 9);
    EXPECT_EQ(qs[2] & 0x0f, 8);
    EXPECT_EQ(qs[3] & 0x0f, 7);
    EXPECT_EQ(qs[4] & 0x0f, 15);
    EXPECT_EQ(qs[5] & 0x0f, 15);
    EXPECT_EQ(qs[6], 0x88);  // zeros in both halves
}

TEST(QuantizeTest, Q8_0RoundsTiesAwayFromZero) {
    std::vector<float> x(32, 0.0f);
    const float values[] = {127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f, -126.5f};
    const int8_t expected[] = {127, 3, -3, 1, -1, 2, -127};
    std::memcpy(x.data(), values, sizeof(values));
    Quantized q = quantize(DType::kQ8_0, x);
    EXPECT_EQ(q.bytes()[0], 0x00);  // d = 1.0
    EXPECT_EQ(q.bytes()[1], 0x3C);
    for (int j = 0; j < 7; ++j) EXPECT_EQ(static_cast<int8_t>(q.bytes()[2 + j]), expected[j]) << j;
}

TEST(QuantizeTest, Q5_0KnownBytes) {
    // Extreme -16 gives d = 1; element i holds level x + 16, low four bits in qs, fifth bit in qh bit i.
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i) x[i] = static_cast<float>((i * 7) % 32 - 16);  // i = 0 gives -16
    Quantized q = quantize(DType::kQ5_0, x);
    EXPECT_EQ(q.bytes()[1], 0x3C);
    uint32_t expected_qh = 0;
    for (int i = 0; i < 32; ++i) expected_qh |= static_cast<uint32_t>(((i * 7) % 32) >> 4) << i;
    uint32_t qh = 0;
    for (int b = 0; b < 4; ++b) qh |= static_cast<uint32_t>(q.bytes()[2 + b]) << (8 * b);
    EXPECT_EQ(qh, expected_qh);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(q.bytes()[6 + j] & 0x0f, ((j * 7) % 32) & 0x0f) << j;
        EXPECT_EQ(q.bytes()[6 + j] >> 4, (((16 + j) * 7) % 32) & 0x0f) << j;
    }
}

// Blocks whose values lie on the format's grid come back unchanged: the extreme levels fix the same scale (and
// min) again, and every value is within rounding error of its level. Steps are powers of two so all is exact.
struct GridFormat {
    DType type;
    int levels;   // number of quant levels
    int offset;   // level that decodes to zero (symmetric types)
    bool has_min;
};

TEST(QuantizeTest, GridValuesRoundTripExactly) {
    constexpr GridFormat kFormats[] = {{DType::kQ4_0, 16, 8, false}, {DType::kQ5_0, 32, 16, false},
                                       {DType::kQ8_0, 255, 127, false}, {DType::kQ4_1, 16, 0, true},
                                       {DType::kQ5_1, 32, 0, true}};
    std::mt19937 rng(11);
    for (const GridFormat& format : kFormats) {
        for (int trial = 0; trial < 50; ++trial) {
            const float d = std::ldexp(1.0f, static_cast<int>(rng() % 20) - 10);
            const float min = format.has_min ? -d * static_cast<float>(rng() % 64) : 0.0f;
            auto value_of = [&](int level) { return static_cast<float>(level - format.offset) * d + min; };
            std::vector<float> x(32);
            for (float& value : x) value = value_of(static_cast<int>(rng() % format.levels));
            // The symmetric types measure the lowest level (larger in magnitude than the highest); the affine ones
            // measure both ends.
            x[rng() % 16] = value_of(0);
            if (format.has_min) x[16 + rng() % 16] = value_of(format.levels - 1);
            ASSERT_EQ(round_trip(format.type, x), x) << dtype_name(format.type) << " trial " << trial;
        }
    }
}

TEST(QuantizeTest, Q6_KGridValuesRoundTripExactly) {
    // Sub-block s holds integers in [-32, 31] times step_s = base * k_s / 128 with k_s in 1..128 and -32 present:
    // the per-group fit finds step_s, the largest maps to scale -128 and d = -base / 128 exactly.
    std::mt19937 rng(5);
    for (int trial = 0; trial < 20; ++trial) {
        const float base = std::ldexp(1.0f, static_cast<int>(rng() % 10) - 5);
        std::vector<float> x(256);
        for (int s = 0; s < 16; ++s) {
            const int k = s == 3 ? 128 : static_cast<int>(rng() % 128) + 1;
            const float step = base * static_cast<float>(k) / 128.0f;
            for (int l = 0; l < 16; ++l) x[16 * s + l] = static_cast<float>(static_cast<int>(rng() % 64) - 32) * step;
            x[16 * s + rng() % 16] = -32.0f * step;
        }
        ASSERT_EQ(round_trip(DType::kQ6_K, x), x) << "trial " << trial;
    }
}

TEST(QuantizeTest, Q4_KGridValuesRoundTripExactly) {
    // Sub-block j holds d * sc_j * q - dmin * m_j with q spanning 0..15: the affine fit recovers each scale and
    // min, and one sub-block with sc = m = 63 makes the super-block scales d and dmin themselves.
    std::mt19937 rng(9);
    for (int trial = 0; trial < 20; ++trial) {
        const float d = std::ldexp(1.0f, -static_cast<int>(rng() % 6) - 4);
        const float dmin = std::ldexp(1.0f, -static_cast<int>(rng() % 6) - 4);
        std::vector<float> x(256);
        for (int j = 0; j < 8; ++j) {
            const int sc = j == 2 ? 63 : static_cast<int>(rng() % 63) + 1;
            const int m = j == 5 ? 63 : static_cast<int>(rng() % 64);
            for (int l = 0; l < 32; ++l) {
                const int q = l == 0 ? 0 : l == 1 ? 15 : static_cast<int>(rng() % 16);
                x[32 * j + l] = d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(m);
            }
        }
        ASSERT_EQ(round_trip(DType::kQ4_K, x), x) << "trial " << trial;
    }
}

TEST(QuantizeTest, ZeroAndConstantBlocks) {
    for (DType type : kQuantizable) {
        for (float value : round_trip(type, std::vector<float>(512, 0.0f))) ASSERT_EQ(value, 0.0f) << dtype_name(type);
        for (float value : round_trip(type, std::vector<float>(512, 0.75f))) {
            // Every format represents a constant block to within its half-precision scale rounding.
            ASSERT_NEAR(value, 0.75f, 0.75f * 0.003f) << dtype_name(type);
        }
    }
}

TEST(QuantizeTest, ZeroBlocksGetGgmlsBytes) {
    // ggml divides the signed extreme (+0) by -8 or -16, so zero blocks store d = -0 and the zero level.
    const std::vector<float> zeros(32, 0.0f);
    Quantized q4 = quantize(DType::kQ4_0, zeros);
    EXPECT_EQ(q4.bytes()[0], 0x00);
    EXPECT_EQ(q4.bytes()[1], 0x80);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(q4.bytes()[2 + j], 0x88);
    Quantized q5 = quantize(DType::kQ5_0, zeros);
    EXPECT_EQ(q5.bytes()[1], 0x80);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(q5.bytes()[2 + j], 0xFF);  // level 16: fifth bit set everywhere
    for (int j = 0; j < 16; ++j) EXPECT_EQ(q5.bytes()[6 + j], 0x00);
    for (DType type : {DType::kQ8_0, DType::kQ4_1, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
        Quantized q = quantize(type, std::vector<float>(256, 0.0f));
        for (int64_t i = 0; i < row_bytes(type, 256); ++i) ASSERT_EQ(q.bytes()[i], 0) << dtype_name(type);
    }
}

TEST(QuantizeTest, BlocksAreIndependentAndQuantizeRowsMatchesRows) {
    const int64_t row_length = 512;
    const int64_t rows = 3;
    const std::vector<float> x = normal_data(row_length * rows, 99);
    for (DType type : kQuantizable) {
        const int64_t bytes_per_row = row_bytes(type, row_length);
        std::vector<uint64_t> all((static_cast<size_t>(bytes_per_row * rows) + 7) / 8 + 1);
        EXPECT_EQ(quantize_rows(type, x.data(), all.data(), rows, row_length), bytes_per_row * rows);
        Quantized whole = quantize(type, x);
        EXPECT_EQ(0, std::memcmp(all.data(), whole.bytes(),
                                 static_cast<size_t>(bytes_per_row * rows)))
            << dtype_name(type);
    }
}

TEST(QuantizeTest, IsDeterministicAcrossCalls) {
    const std::vector<float> x = normal_data(1024, 1234, 0.1f);
    for (DType type : kQuantizable) {
        Quantized a = quantize(type, x);
        Quantized b = quantize(type, x);
        EXPECT_EQ(a.words, b.words) << dtype_name(type);
    }
}

// Data from integer arithmetic only, so it is the same on every platform. Four segments: bell-shaped (sums of
// four 16-bit uniforms), uniform, uniform with every 7th value 4x, bell-shaped again; on top, an 8x outlier every
// 97 elements and every fifth super-block shifted positive. Rare branches of the K-quant searches need this much.
std::vector<float> portable_data(int n) {
    std::vector<float> x(static_cast<size_t>(n));
    uint32_t state = 12345;
    for (int i = 0; i < n; ++i) {
        const int segment = i / (n / 4);
        const int terms = (segment == 1 || segment == 2) ? 1 : 4;
        int32_t sum = 0;
        for (int k = 0; k < terms; ++k) {
            state = state * 1664525u + 1013904223u;
            sum += static_cast<int32_t>(state >> 16) - 32768;
        }
        float value = static_cast<float>(sum) * (1.0f / 65536.0f);
        if (segment == 2 && i % 7 == 0) value *= 4.0f;
        if (i % 97 == 0) value *= 8.0f;
        if ((i / 256) % 5 == 4) value += 1.5f;
        x[static_cast<size_t>(i)] = value * 0.0625f;
    }
    return x;
}

uint64_t fnv1a(const uint8_t* bytes, int64_t size) {
    uint64_t hash = 1469598103934665603ull;
    for (int64_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
    return hash;
}

// FNV-1a of the quantized bytes of portable_data(65536). The values come from a separate C build of ggml's
// quantize_row_*_ref functions (transcribed from ggml-quants.c, compiled without FMA contraction, half
// conversion by the compiler's _Float16), not from tern; they pin the exact bytes llama.cpp would write.
TEST(QuantizeTest, MatchesGgmlReferenceBytes) {
    struct Golden {
        DType type;
        uint64_t hash;
    };
    constexpr Golden kGolden[] = {
        {DType::kQ4_0, 0x434578d01b0194ccull}, {DType::kQ4_1, 0x0fb12d6dd2bd49d0ull},
        {DType::kQ5_0, 0x3f57f6ce7ced519eull}, {DType::kQ5_1, 0x6149d026c55bdd76ull},
        {DType::kQ8_0, 0x6ef81b720d8b5909ull}, {DType::kQ4_K, 0x2ba865ae2c5295edull},
        {DType::kQ5_K, 0x135a66858b49b9cfull}, {DType::kQ6_K, 0x849e01380979a3f2ull},
        {DType::kF16, 0x7ab9b696ab3580bfull},
    };
    constexpr int kElements = 65536;
    const std::vector<float> x = portable_data(kElements);
    for (const Golden& golden : kGolden) {
        Quantized q = quantize(golden.type, x);
        EXPECT_EQ(fnv1a(q.bytes(), row_bytes(golden.type, kElements)), golden.hash) << dtype_name(golden.type);
    }
}

TEST(QuantizeDeathTest, RejectsPartialBlocksAndUnsupportedTypes) {
    std::vector<float> x(256, 1.0f);
    std::vector<uint64_t> out(64);
    EXPECT_DEATH(quantize_row(DType::kQ4_K, x.data(), out.data(), 255), "block");
    EXPECT_DEATH(quantize_row(DType::kQ3_K, x.data(), out.data(), 256), "no quantizer");
}

}  // namespace
}  // namespace tern
