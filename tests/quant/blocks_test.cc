#include "quant/blocks.h"

#include <gtest/gtest.h>

#include <array>

#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "tensor/dtype.h"

namespace tern {
namespace {

template <DType kType>
void expect_block_matches_traits() {
    const DTypeTraits& traits = dtype_traits(kType);
    EXPECT_EQ(traits.block_bytes, static_cast<int64_t>(sizeof(typename BlockOf<kType>::Type))) << traits.name;
    EXPECT_EQ(traits.block_size, BlockOf<kType>::kElements) << traits.name;
}

TEST(BlocksTest, StructSizesMatchDTypeTraits) {
    expect_block_matches_traits<DType::kQ4_0>();
    expect_block_matches_traits<DType::kQ4_1>();
    expect_block_matches_traits<DType::kQ5_0>();
    expect_block_matches_traits<DType::kQ5_1>();
    expect_block_matches_traits<DType::kQ8_0>();
    expect_block_matches_traits<DType::kQ4_K>();
    expect_block_matches_traits<DType::kQ5_K>();
    expect_block_matches_traits<DType::kQ6_K>();
}

TEST(BlocksTest, CanDequantizeAgreesWithDTypeTraits) {
    for (uint32_t id = 0; id < 64; ++id) {
        const auto traits = dtype_traits_of(id);
        if (!traits) continue;
        EXPECT_EQ(can_dequantize(traits->type), traits->can_dequantize) << traits->name;
        // Everything tern writes it can also read back.
        if (can_quantize(traits->type)) {
            EXPECT_TRUE(can_dequantize(traits->type)) << traits->name;
        }
    }
    for (DType type : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K,
                       DType::kQ6_K}) {
        EXPECT_TRUE(can_quantize(type)) << dtype_name(type);
    }
    EXPECT_FALSE(can_quantize(DType::kQ2_K));
    EXPECT_FALSE(can_dequantize(DType::kQ8_K));
}

// Six-bit scales s and mins m for sub-blocks 0..7, and their packing worked out by hand from ggml's layout:
// bytes 0-3 = s[0..3] | (s[4..7] >> 4) << 6, bytes 4-7 = m[0..3] | (m[4..7] >> 4) << 6,
// bytes 8-11 = (s[4..7] & 15) | (m[4..7] & 15) << 4.
constexpr std::array<uint8_t, 8> kScales = {1, 2, 3, 4, 17, 33, 49, 63};
constexpr std::array<uint8_t, 8> kMins = {0, 5, 10, 63, 16, 32, 48, 1};
constexpr std::array<uint8_t, 12> kPacked = {0x41, 0x82, 0xC3, 0xC4, 0x40, 0x85, 0xCA, 0x3F, 0x01, 0x01, 0x01, 0x1F};

TEST(BlocksTest, UnpackScaleMinK4ReadsHandPackedBytes) {
    for (int j = 0; j < 8; ++j) {
        uint8_t scale = 0;
        uint8_t min = 0;
        unpack_scale_min_k4(j, kPacked.data(), &scale, &min);
        EXPECT_EQ(scale, kScales[j]) << "sub-block " << j;
        EXPECT_EQ(min, kMins[j]) << "sub-block " << j;
    }
}

TEST(BlocksTest, PackScaleMinK4WritesHandPackedBytes) {
    std::array<uint8_t, 12> packed{};
    for (int j = 0; j < 8; ++j) pack_scale_min_k4(j, kScales[j], kMins[j], packed.data());
    EXPECT_EQ(packed, kPacked);
}

TEST(BlocksTest, ScaleMinK4RoundTripsEveryValue) {
    for (int value = 0; value < 64; ++value) {
        std::array<uint8_t, 12> packed{};
        for (int j = 0; j < 8; ++j) {
            pack_scale_min_k4(j, static_cast<uint8_t>((value + j) % 64), static_cast<uint8_t>((value * 7 + j) % 64),
                              packed.data());
        }
        for (int j = 0; j < 8; ++j) {
            uint8_t scale = 0;
            uint8_t min = 0;
            unpack_scale_min_k4(j, packed.data(), &scale, &min);
            EXPECT_EQ(scale, (value + j) % 64);
            EXPECT_EQ(min, (value * 7 + j) % 64);
        }
    }
}

}  // namespace
}  // namespace tern
