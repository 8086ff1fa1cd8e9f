// Hand-built blocks, written byte by byte at the offsets ggml's layout gives, with the values they must decode to
// worked out from that layout. Each test states a few values literally and checks all of them by the layout rule.
#include "quant/dequantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace tern {
namespace {

// Raw bytes for `blocks` blocks of `type`, aligned like GGUF data.
class RawBlocks {
public:
    RawBlocks(DType type, int blocks)
        : type_(type),
          elements_(dtype_traits(type).block_size * blocks),
          words_(static_cast<size_t>((row_bytes(type, elements_) + 7) / 8)) {}

    uint8_t* bytes() { return reinterpret_cast<uint8_t*>(words_.data()); }
    void put_u16(int64_t offset, uint16_t value) {
        bytes()[offset] = static_cast<uint8_t>(value & 0xff);
        bytes()[offset + 1] = static_cast<uint8_t>(value >> 8);
    }
    std::vector<float> decode() {
        std::vector<float> out(static_cast<size_t>(elements_));
        dequantize_row(type_, bytes(), out.data(), elements_);
        return out;
    }

private:
    DType type_;
    int64_t elements_;
    std::vector<uint64_t> words_;
};

constexpr uint16_t kHalfQuarter = 0x3400;  // 0.25
constexpr uint16_t kHalfHalf = 0x3800;     // 0.5
constexpr uint16_t kHalfOne = 0x3C00;      // 1.0
constexpr uint16_t kHalfTwo = 0x4000;      // 2.0
constexpr uint16_t kHalfMinusOne = 0xBC00;
constexpr uint16_t kHalfMinusTwo = 0xC000;

TEST(DequantizeTest, F32F16Bf16) {
    RawBlocks f32(DType::kF32, 3);
    const float values[3] = {1.5f, -0.0f, 3e-40f};
    std::memcpy(f32.bytes(), values, sizeof(values));
    EXPECT_EQ(f32.decode(), std::vector<float>(values, values + 3));

    RawBlocks f16(DType::kF16, 4);
    f16.put_u16(0, 0x3C00);
    f16.put_u16(2, 0xC500);  // -5
    f16.put_u16(4, 0x0001);  // 2^-24
    f16.put_u16(6, 0x7C00);
    EXPECT_EQ(f16.decode(), (std::vector<float>{1.0f, -5.0f, std::ldexp(1.0f, -24), INFINITY}));

    RawBlocks bf16(DType::kBF16, 3);
    bf16.put_u16(0, 0x3F80);
    bf16.put_u16(2, 0xC0A0);  // -5
    bf16.put_u16(4, 0x4049);  // 3.140625
    EXPECT_EQ(bf16.decode(), (std::vector<float>{1.0f, -5.0f, 3.140625f}));
}

TEST(DequantizeTest, Q4_0LowNibblesAreFirstHalf) {
    RawBlocks raw(DType::kQ4_0, 2);
    raw.put_u16(0, kHalfHalf);
    for (int j = 0; j < 16; ++j) raw.bytes()[2 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
    raw.put_u16(18, kHalfMinusTwo);
    for (int j = 0; j < 16; ++j) raw.bytes()[20 + j] = 0x9F;
    const std::vector<float> y = raw.decode();
    EXPECT_EQ(y[0], -4.0f);
    EXPECT_EQ(y[15], 3.5f);
    EXPECT_EQ(y[16], 3.5f);
    EXPECT_EQ(y[31], -4.0f);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], (j - 8) * 0.5f) << j;
        EXPECT_EQ(y[16 + j], (7 - j) * 0.5f) << j;
        EXPECT_EQ(y[32 + j], -14.0f) << j;  // nibble 15 -> 7 * -2
        EXPECT_EQ(y[48 + j], -2.0f) << j;   // nibble 9 -> 1 * -2
    }
}

TEST(DequantizeTest, Q4_1AddsMin) {
    RawBlocks raw(DType::kQ4_1, 1);
    raw.put_u16(0, kHalfQuarter);
    raw.put_u16(2, kHalfMinusOne);
    for (int j = 0; j < 16; ++j) raw.bytes()[4 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
    const std::vector<float> y = raw.decode();
    EXPECT_EQ(y[0], -1.0f);
    EXPECT_EQ(y[15], 2.75f);
    EXPECT_EQ(y[16], 2.75f);
    EXPECT_EQ(y[31], -1.0f);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], j * 0.25f - 1.0f) << j;
        EXPECT_EQ(y[16 + j], (15 - j) * 0.25f - 1.0f) << j;
    }
}

// qh is a little-endian 32-bit word whose bit i is the fifth bit of element i.
bool qh_bit(const uint8_t* qh, int element) { return (qh[element / 8] >> (element % 8)) & 1; }

TEST(DequantizeTest, Q5_0HighBitsComeFromLittleEndianQh) {
    RawBlocks raw(DType::kQ5_0, 1);
    raw.put_u16(0, kHalfOne);
    const uint8_t qh[4] = {0x01, 0x80, 0x00, 0xFF};  // bits 0, 15 and 24..31
    std::memcpy(raw.bytes() + 2, qh, 4);
    for (int j = 0; j < 16; ++j) raw.bytes()[6 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
    const std::vector<float> y = raw.decode();
    EXPECT_EQ(y[0], 0.0f);     // nibble 0 + 16 - 16
    EXPECT_EQ(y[1], -15.0f);   // nibble 1 - 16
    EXPECT_EQ(y[15], 15.0f);   // nibble 15 + 16 - 16
    EXPECT_EQ(y[16], -1.0f);   // nibble 15, bit 16 clear
    EXPECT_EQ(y[23], -8.0f);   // nibble 8, bit 23 clear
    EXPECT_EQ(y[24], 7.0f);    // nibble 7, bit 24 set
    EXPECT_EQ(y[31], 0.0f);    // nibble 0, bit 31 set
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], static_cast<float>(j + 16 * qh_bit(qh, j) - 16)) << j;
        EXPECT_EQ(y[16 + j], static_cast<float>(15 - j + 16 * qh_bit(qh, 16 + j) - 16)) << j;
    }
}

TEST(DequantizeTest, Q5_1HighBitsAndMin) {
    RawBlocks raw(DType::kQ5_1, 1);
    raw.put_u16(0, kHalfHalf);
    raw.put_u16(2, kHalfTwo);
    const uint8_t qh[4] = {0xAA, 0x00, 0x00, 0x80};  // bits 1, 3, 5, 7 and 31
    std::memcpy(raw.bytes() + 4, qh, 4);
    for (int j = 0; j < 16; ++j) raw.bytes()[8 + j] = static_cast<uint8_t>(j | j << 4);
    const std::vector<float> y = raw.decode();
    EXPECT_EQ(y[0], 2.0f);
    EXPECT_EQ(y[1], 10.5f);   // (1 + 16) * 0.5 + 2
    EXPECT_EQ(y[2], 3.0f);
    EXPECT_EQ(y[7], 13.5f);   // (7 + 16) * 0.5 + 2
    EXPECT_EQ(y[17], 2.5f);
    EXPECT_EQ(y[31], 17.5f);  // (15 + 16) * 0.5 + 2
    for (int i = 0; i < 32; ++i) {
        EXPECT_EQ(y[i], static_cast<float>(i % 16 + 16 * qh_bit(qh, i)) * 0.5f + 2.0f) << i;
    }
}

TEST(DequantizeTest, Q8_0SignedBytes) {
    RawBlocks raw(DType::kQ8_0, 1);
    raw.put_u16(0, 0x3000);  // 0.125
    raw.bytes()[2] = 0x80;   // -128
    raw.bytes()[3] = 0x7F;   // 127
    for (int j = 2; j < 32; ++j) raw.bytes()[2 + j] = static_cast<uint8_t>(j - 16);
    const std::vector<float> y = raw.decode();
    EXPECT_EQ(y[0], -16.0f);
    EXPECT_EQ(y[1], 15.875f);
    EXPECT_EQ(y[2], -1.75f);
    EXPECT_EQ(y[16], 0.0f);
    EXPECT_EQ(y[31], 1.875f);
}

// The scales of Q4_K/Q5_K test blocks (see blocks_test.cc for how the bytes were packed by hand).
constexpr uint8_t kPackedScales[12] = {0x41, 0x82, 0xC3, 0xC4, 0x40, 0x85, 0xCA, 0x3F, 0x01, 0x01, 0x01, 0x1F};
constexpr int kSubScale[8] = {1, 2, 3, 4, 17, 33, 49, 63};
constexpr int kSubMin[8] = {0, 5, 10, 63, 16, 32, 48, 1};

uint8_t nibble_pattern(int index) { return static_cast<uint8_t>((index % 16) | (15 - index % 16) << 4); }

// Q4_K/Q5_K quant of element e: runs of 64 share 32 bytes, low nibbles first.
int k4_nibble(const uint8_t* qs, int e) {
    const int chunk = e / 64;
    const int r = e % 64;
    const uint8_t byte = qs[32 * chunk + r % 32];
    return r < 32 ? (byte & 0x0f) : (byte >> 4);
}

TEST(DequantizeTest, Q4_KScalesMinsAndNibbleRuns) {
    RawBlocks raw(DType::kQ4_K, 1);
    raw.put_u16(0, kHalfHalf);     // d
    raw.put_u16(2, kHalfQuarter);  // dmin
    std::memcpy(raw.bytes() + 4, kPackedScales, 12);
    uint8_t* qs = raw.bytes() + 16;
    for (int i = 0; i < 128; ++i) qs[i] = nibble_pattern(i);
    const std::vector<float> y = raw.decode();
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_EQ(y[1], 0.5f);
    EXPECT_EQ(y[15], 7.5f);
    EXPECT_EQ(y[32], 13.75f);   // sub-block 1, high nibble 15: 0.5 * 2 * 15 - 0.25 * 5
    EXPECT_EQ(y[100], 6.25f);   // sub-block 3, high nibble of qs[36] = 11: 0.5 * 4 * 11 - 0.25 * 63
    EXPECT_EQ(y[150], 47.0f);   // sub-block 4, low nibble of qs[86] = 6: 0.5 * 17 * 6 - 0.25 * 16
    EXPECT_EQ(y[180], 173.5f);  // sub-block 5, high nibble of qs[84] = 11: 0.5 * 33 * 11 - 0.25 * 32
    EXPECT_EQ(y[200], 184.0f);  // sub-block 6, low nibble of qs[104] = 8: 0.5 * 49 * 8 - 0.25 * 48
    EXPECT_EQ(y[255], -0.25f);  // sub-block 7, high nibble 0: -0.25 * 1
    for (int e = 0; e < 256; ++e) {
        const int sub = e / 32;
        EXPECT_EQ(y[e], 0.5f * kSubScale[sub] * k4_nibble(qs, e) - 0.25f * kSubMin[sub]) << e;
    }
}

TEST(DequantizeTest, Q5_KFifthBitsPairPerRun) {
    RawBlocks raw(DType::kQ5_K, 1);
    raw.put_u16(0, kHalfHalf);
    raw.put_u16(2, kHalfQuarter);
    std::memcpy(raw.bytes() + 4, kPackedScales, 12);
    uint8_t* qh = raw.bytes() + 16;
    uint8_t* qs = raw.bytes() + 48;
    for (int l = 0; l < 32; ++l) qh[l] = static_cast<uint8_t>(l * 37);
    for (int i = 0; i < 128; ++i) qs[i] = nibble_pattern(i);
    const std::vector<float> y = raw.decode();
    // qh[1] = 37 = 0b00100101: bits 0, 2 and 5.
    EXPECT_EQ(y[1], 8.5f);     // run 0 low half uses bit 0: (1 + 16) * 0.5 * 1
    EXPECT_EQ(y[33], 12.75f);  // run 0 high half uses bit 1 (clear): 14 * 0.5 * 2 - 0.25 * 5
    EXPECT_EQ(y[65], 23.0f);   // run 1 low half uses bit 2: (1 + 16) * 0.5 * 3 - 0.25 * 10
    EXPECT_EQ(y[161], 487.0f); // run 2 high half uses bit 5: (14 + 16) * 0.5 * 33 - 0.25 * 32
    EXPECT_EQ(y[225], 440.75f);// run 3 high half uses bit 7 (clear): 14 * 0.5 * 63 - 0.25 * 1
    for (int e = 0; e < 256; ++e) {
        const int sub = e / 32;
        const int bit = (qh[e % 32] >> sub) & 1;  // sub-block s reads bit s
        EXPECT_EQ(y[e], 0.5f * kSubScale[sub] * (k4_nibble(qs, e) + 16 * bit) - 0.25f * kSubMin[sub]) << e;
    }
}

TEST(DequantizeTest, Q6_KLowAndHighBitArrangement) {
    RawBlocks raw(DType::kQ6_K, 1);
    uint8_t* ql = raw.bytes();
    uint8_t* qh = raw.bytes() + 128;
    auto* scales = reinterpret_cast<int8_t*>(raw.bytes() + 192);
    for (int i = 0; i < 128; ++i) ql[i] = static_cast<uint8_t>(i * 7);
    for (int i = 0; i < 64; ++i) qh[i] = static_cast<uint8_t>(i * 13);
    for (int s = 0; s < 16; ++s) scales[s] = static_cast<int8_t>(s % 2 ? -(s + 1) : s + 1);
    raw.put_u16(208, kHalfQuarter);
    const std::vector<float> y = raw.decode();
    EXPECT_EQ(y[0], -8.0f);     // ql[0] = 0, qh[0] = 0: (0 - 32) * 1 * 0.25
    EXPECT_EQ(y[1], -2.25f);    // low nibble of ql[1] = 7, bits 0-1 of qh[1] = 1: (23 - 32) * 1 * 0.25
    EXPECT_EQ(y[33], 17.25f);   // low nibble of ql[33] = 7, bits 2-3 of qh[1] = 3: (55 - 32) * 3 * 0.25
    EXPECT_EQ(y[65], -40.0f);   // high nibble of ql[1] = 0, bits 4-5 of qh[1] = 0: -32 * 5 * 0.25
    EXPECT_EQ(y[97], -31.5f);   // high nibble of ql[33] = 14, bits 6-7 of qh[1] = 0: -18 * 7 * 0.25
    EXPECT_EQ(y[129], -20.25f); // second half: ql[65] = 0xC7, qh[33] = 0xAD: (23 - 32) * 9 * 0.25
    EXPECT_EQ(y[255], 100.0f);  // high nibble of ql[127] = 7, bits 6-7 of qh[63] = 0: -25 * -16 * 0.25
    for (int e = 0; e < 256; ++e) {
        const int half = e / 128;
        const int group = e % 128 / 32;
        const int l = e % 32;
        const uint8_t low_byte = ql[64 * half + l + 32 * (group % 2)];
        const int low = group < 2 ? (low_byte & 0x0f) : (low_byte >> 4);
        const int high = (qh[32 * half + l] >> (2 * group)) & 3;
        EXPECT_EQ(y[e], 0.25f * scales[e / 16] * ((low | high << 4) - 32)) << e;
    }
}

TEST(DequantizeTest, AllTypesDecodeZeroBytesToZero) {
    for (DType type : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                       DType::kQ5_1, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
        RawBlocks raw(type, 2);
        for (float value : raw.decode()) ASSERT_EQ(value, 0.0f) << dtype_name(type);
    }
}

TEST(DequantizeDeathTest, RejectsPartialBlocks) {
    RawBlocks raw(DType::kQ4_0, 1);
    std::vector<float> out(32);
    EXPECT_DEATH(dequantize_row(DType::kQ4_0, raw.bytes(), out.data(), 31), "block");
    EXPECT_DEATH(dequantize_row(DType::kQ2_K, raw.bytes(), out.data(), 256), "no dequantizer");
}

}  // namespace
}  // namespace tern
