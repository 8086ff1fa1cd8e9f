// Every ISA's kernels against the scalar reference, and the reference packed matmul against a float64 dot product
// of the dequantized weights and activations (which checks the packed layouts themselves).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <cstring>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace tern::kernels {
namespace {

struct Shape {
    int64_t num_rows;
    int64_t row_length;
    int64_t num_tokens;
};

// Odd row counts, 1..64 tokens (each token-tile width of the SIMD kernels and uneven tile splits), more row
// groups than one panel of the tiled kernels, and (for the float types, which have no blocks) row lengths that are
// not a multiple of any vector width.
const Shape kShapes[] = {{1, 32, 1},   {15, 64, 3},   {16, 96, 4},  {17, 32, 5},  {33, 256, 9},  {100, 2048, 1},
                         {48, 512, 16}, {40, 96, 2},  {56, 64, 6},  {24, 32, 7},  {403, 64, 13}, {30, 64, 64},
                         {7, 37, 3},    {5, 19, 6},   {9, 200, 5}};

std::vector<float> random_values(int64_t count, uint32_t seed, float scale = 1.0f) {
    std::mt19937 generator(seed);
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> values(static_cast<size_t>(count));
    for (float& value : values) value = normal(generator);
    return values;
}

struct TestMatrix {
    std::vector<uint8_t> bytes;
    MatrixView view;
};

TestMatrix make_matrix(DType type, const Shape& shape, uint32_t seed) {
    TestMatrix matrix;
    const std::vector<float> values = random_values(shape.num_rows * shape.row_length, seed);
    const int64_t stride = row_bytes(type, shape.row_length);
    matrix.bytes.resize(static_cast<size_t>(stride * shape.num_rows));
    quantize_rows(type, values.data(), matrix.bytes.data(), shape.num_rows, shape.row_length);
    matrix.view = MatrixView{type, matrix.bytes.data(), shape.row_length, shape.num_rows, stride};
    return matrix;
}

std::vector<float> run(const KernelTable& table, const PackedWeights& weights, const std::vector<float>& x,
                       const Shape& shape, Activations* activations) {
    prepare_activations(table, x.data(), shape.num_tokens, shape.row_length, shape.row_length,
                        needs_q8_activations(weights), activations);
    std::vector<float> y(static_cast<size_t>(shape.num_tokens * shape.num_rows), -1.0f);
    std::vector<float> scratch(static_cast<size_t>(shape.row_length));
    matmul(table, weights, *activations, 0, weights.num_work_units(), y.data(), shape.num_rows, scratch.data());
    return y;
}

double max_relative_error(const std::vector<float>& actual, const std::vector<double>& expected) {
    double max_error = 0.0, max_magnitude = 1e-6;
    for (size_t idx = 0; idx < actual.size(); ++idx) {
        max_error = std::max(max_error, std::abs(actual[idx] - expected[idx]));
        max_magnitude = std::max(max_magnitude, std::abs(expected[idx]));
    }
    return max_error / max_magnitude;
}

class MatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulTest, ReferenceEqualsDequantizedDotProduct) {
    const KernelTable& ref_table = *kernel_table(Isa::kRef);
    for (const Shape& shape : kShapes) {
        if (shape.row_length % dtype_traits(GetParam()).block_size != 0) continue;
        SCOPED_TRACE(::testing::Message() << shape.num_rows << "x" << shape.row_length << ", " << shape.num_tokens << " tokens");
        const TestMatrix matrix = make_matrix(GetParam(), shape, 11);
        const PackedWeights packed = pack_weights(matrix.view);
        const std::vector<float> x = random_values(shape.num_tokens * shape.row_length, 12);
        Activations activations;
        const std::vector<float> y = run(ref_table, packed, x, shape, &activations);
        std::vector<double> expected(y.size());
        std::vector<float> row(static_cast<size_t>(shape.row_length));
        for (int64_t row_idx = 0; row_idx < shape.num_rows; ++row_idx) {
            dequantize_row(GetParam(), matrix.view.row(row_idx), row.data(), shape.row_length);
            for (int64_t token_idx = 0; token_idx < shape.num_tokens; ++token_idx) {
                double sum = 0.0;
                for (int64_t idx = 0; idx < shape.row_length; ++idx) {
                    // The kernels see activations as quantized (or exact, for float weights).
                    const size_t flat = static_cast<size_t>(token_idx * shape.row_length + idx);
                    const double activation = activations.has_q8
                        ? static_cast<double>(activations.scale[flat / 32]) * activations.q8[flat]
                        : x[flat];
                    sum += static_cast<double>(row[static_cast<size_t>(idx)]) * activation;
                }
                expected[static_cast<size_t>(token_idx * shape.num_rows + row_idx)] = sum;
            }
        }
        EXPECT_LT(max_relative_error(y, expected), 2e-5);
    }
}

TEST_P(MatmulTest, EveryIsaEqualsReference) {
    const KernelTable& ref_table = *kernel_table(Isa::kRef);
    int num_checked = 0;
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
        const KernelTable* table = kernel_table(isa);
        if (table == nullptr) continue;
        ++num_checked;
        for (const Shape& shape : kShapes) {
            if (shape.row_length % dtype_traits(GetParam()).block_size != 0) continue;
            SCOPED_TRACE(::testing::Message() << isa_name(isa) << " " << shape.num_rows << "x" << shape.row_length);
            const TestMatrix matrix = make_matrix(GetParam(), shape, 21);
            const PackedWeights packed = pack_weights(matrix.view);
            const std::vector<float> x = random_values(shape.num_tokens * shape.row_length, 22);
            Activations ref_activations, isa_activations;
            const std::vector<float> expected_float = run(ref_table, packed, x, shape, &ref_activations);
            const std::vector<float> actual = run(*table, packed, x, shape, &isa_activations);
            EXPECT_EQ(isa_activations.q8, ref_activations.q8);
            EXPECT_EQ(isa_activations.scale, ref_activations.scale);
            EXPECT_EQ(isa_activations.block_sum, ref_activations.block_sum);
            const std::vector<double> expected(expected_float.begin(), expected_float.end());
            EXPECT_LT(max_relative_error(actual, expected), 1e-5);
        }
    }
    if (num_checked == 0) GTEST_SKIP() << "this CPU has no SIMD kernel set";
}

// Threads each take a range of row groups: any split must give the same bits as one call over all of them.
TEST_P(MatmulTest, SplitWorkUnitsEqualOneCall) {
    const Shape shape{403, 256, 13};  // 256: a whole Q6_K block
    const TestMatrix matrix = make_matrix(GetParam(), shape, 31);
    const PackedWeights packed = pack_weights(matrix.view);
    const std::vector<float> x = random_values(shape.num_tokens * shape.row_length, 32);
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
        const KernelTable* table = kernel_table(isa);
        if (table == nullptr) continue;
        SCOPED_TRACE(isa_name(isa));
        Activations activations;
        const std::vector<float> whole = run(*table, packed, x, shape, &activations);
        const int64_t num_units = packed.num_work_units();
        for (int64_t split : {int64_t{1}, int64_t{5}, num_units / 2 + 1, num_units - 1}) {
            std::vector<float> y(whole.size(), -1.0f);
            std::vector<float> scratch(static_cast<size_t>(shape.row_length));
            matmul(*table, packed, activations, 0, split, y.data(), shape.num_rows, scratch.data());
            matmul(*table, packed, activations, split, num_units, y.data(), shape.num_rows, scratch.data());
            EXPECT_EQ(y, whole) << "split at " << split;
        }
    }
}

// Kernels keep what they derive from an input per thread (kernels/activations.h, generation): an Activations
// prepared again with another input of the same shape must not get the previous input's.
TEST_P(MatmulTest, ReusedActivationsTakeTheNewInput) {
    const Shape shape{64, 256, 16};
    const TestMatrix matrix = make_matrix(GetParam(), shape, 41);
    const PackedWeights packed = pack_weights(matrix.view);
    const std::vector<float> inputs[] = {random_values(shape.num_tokens * shape.row_length, 42),
                                         random_values(shape.num_tokens * shape.row_length, 43)};
    std::vector<double> expected[2];
    for (int idx = 0; idx < 2; ++idx) {  // the scalar reference keeps nothing between calls
        Activations activations;
        const std::vector<float> y = run(*kernel_table(Isa::kRef), packed, inputs[idx], shape, &activations);
        expected[idx].assign(y.begin(), y.end());
    }
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
        const KernelTable* table = kernel_table(isa);
        if (table == nullptr) continue;
        SCOPED_TRACE(isa_name(isa));
        Activations reused;
        for (int round = 0; round < 4; ++round) {
            const int idx = round % 2;
            EXPECT_LT(max_relative_error(run(*table, packed, inputs[idx], shape, &reused), expected[idx]), 1e-5)
                << "round " << round;
        }
    }
}

// Rows of the int8-kernel types get the same bits whether a token is computed alone (decode), among 16 (the
// streamed batched decode) or among 40 (token tiles), on every ISA, and for Q4_0 and Q8_0 the AVX-512 kernels'
// bits equal the scalar reference's: batch invariance of the quantized models rests on it.
TEST(MatmulBits, SameForAnyTokenCount) {
    const int64_t num_rows = 37;
    const std::vector<float> x = random_values(40 * 1024, 52);
    for (DType type : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
        // 3.5 scale spans where the type allows it; the K-quants' super-blocks are whole spans.
        const int64_t row_length = dtype_traits(type).block_size == 256 ? 1024 : 896;
        const TestMatrix matrix = make_matrix(type, Shape{num_rows, row_length, 1}, 51);
        const PackedWeights packed = pack_weights(matrix.view);
        for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
            const KernelTable* table = kernel_table(isa);
            if (table == nullptr) continue;
            SCOPED_TRACE(::testing::Message() << dtype_name(type) << " " << isa_name(isa));
            Activations activations;
            const std::vector<float> batch40 = run(*table, packed, x, Shape{num_rows, row_length, 40}, &activations);
            const std::vector<float> batch16 = run(*table, packed, x, Shape{num_rows, row_length, 16}, &activations);
            for (int64_t token : {int64_t{0}, int64_t{5}, int64_t{15}}) {
                const std::vector<float> one_x(x.begin() + token * row_length, x.begin() + (token + 1) * row_length);
                const std::vector<float> alone = run(*table, packed, one_x, Shape{num_rows, row_length, 1}, &activations);
                for (int64_t row = 0; row < num_rows; ++row) {
                    ASSERT_EQ(alone[row], batch16[token * num_rows + row]) << "token " << token << " row " << row;
                    ASSERT_EQ(alone[row], batch40[token * num_rows + row]) << "token " << token << " row " << row;
                }
            }
            if (isa == Isa::kAvx512 && (type == DType::kQ4_0 || type == DType::kQ8_0)) {
                Activations ref_activations;
                EXPECT_EQ(batch40, run(*kernel_table(Isa::kRef), packed, x, Shape{num_rows, row_length, 40},
                                       &ref_activations));
            }
        }
    }
}

// The 8-bit activations share one scale per span of kActivationScaleSpan values, the last span of a row shorter:
// a large value raises its own span's scale and no other's.
TEST(QuantizedActivations, OneScalePerSpan) {
    const int64_t length = 896;  // spans of 8, 8, 8 and 4 blocks
    std::vector<float> x = random_values(length, 61);
    x[300] = 50.0f;  // span 1
    for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
        const KernelTable* table = kernel_table(isa);
        if (table == nullptr) continue;
        SCOPED_TRACE(isa_name(isa));
        Activations activations;
        prepare_activations(*table, x.data(), 1, length, length, true, &activations);
        ASSERT_EQ(activations.num_scale_spans(), 4);
        for (int64_t span = 0; span < 4; ++span) {
            const int64_t begin = span * kActivationScaleSpan, end = std::min(length, begin + kActivationScaleSpan);
            float max_abs = 0.0f;
            for (int64_t idx = begin; idx < end; ++idx) max_abs = std::max(max_abs, std::fabs(x[idx]));
            for (int64_t block = begin / 32; block < end / 32; ++block) {
                EXPECT_EQ(activations.scale[block], max_abs / 127.0f) << "block " << block;
                int32_t total = 0;
                for (int64_t idx = block * 32; idx < block * 32 + 32; ++idx) {
                    EXPECT_EQ(activations.q8[idx], static_cast<int8_t>(std::nearbyint(x[idx] / activations.scale[block])))
                        << "value " << idx;
                    total += activations.q8[idx];
                }
                EXPECT_EQ(activations.block_sum[block], total);
                EXPECT_FLOAT_EQ(activations.sum[block], activations.scale[block] * static_cast<float>(total));
            }
        }
        EXPECT_GT(activations.scale[8], 10.0f * activations.scale[0]);  // the large value's span only
        EXPECT_EQ(activations.q8[300], 127);
    }
}

// The streamed kernels' copy of the 8-bit values: per block and 4-value chunk, the tokens' 4 bytes side by side;
// a new input of the same shape gets its own copy.
TEST(QuantizedActivations, InterleavedForStreams) {
    const int64_t num_tokens = 5, length = 96;
    for (uint32_t seed : {71u, 72u}) {
        const std::vector<float> x = random_values(num_tokens * length, seed);
        Activations activations;
        prepare_activations(*kernel_table(Isa::kRef), x.data(), num_tokens, length, length, true, &activations);
        const std::vector<int8_t>& interleaved = interleaved_q8(activations);
        for (int64_t token = 0; token < num_tokens; ++token) {
            for (int64_t idx = 0; idx < length; ++idx) {
                const int64_t block = idx / 32, chunk = idx % 32 / 4;
                ASSERT_EQ(interleaved[(block * 8 + chunk) * 4 * num_tokens + 4 * token + idx % 4],
                          activations.q8[token * length + idx])
                    << "seed " << seed << " token " << token << " value " << idx;
            }
        }
    }
}

// Without repacking (ModelOptions::repack false) K-quants take the row-major reference: it agrees with the
// packed kernels of every ISA.
TEST(MatmulRowMajor, KQuantsEqualPacked) {
    const Shape shape{37, 512, 5};
    for (DType type : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
        SCOPED_TRACE(dtype_name(type));
        const TestMatrix matrix = make_matrix(type, shape, 41);
        const PackedWeights row_major = pack_weights(matrix.view, /*enable=*/false);
        ASSERT_EQ(row_major.layout, WeightLayout::kRowMajor);
        const std::vector<float> x = random_values(shape.num_tokens * shape.row_length, 42);
        for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
            const KernelTable* table = kernel_table(isa);
            if (table == nullptr) continue;
            Activations packed_activations, row_activations;
            const std::vector<float> packed = run(*table, pack_weights(matrix.view), x, shape, &packed_activations);
            const std::vector<float> unpacked = run(*table, row_major, x, shape, &row_activations);
            EXPECT_LT(max_relative_error(unpacked, std::vector<double>(packed.begin(), packed.end())), 1e-5)
                << isa_name(isa);
        }
    }
}

// Q5_0 is widened to Q8_0x16 at load: the dequantized-dot-product test shows nothing is rounded.
INSTANTIATE_TEST_SUITE_P(Types, MatmulTest,
                         ::testing::Values(DType::kQ4_0, DType::kQ8_0, DType::kQ5_0, DType::kQ6_K, DType::kQ4_K,
                                           DType::kQ5_K, DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(PackedWeights, LayoutAndPadding) {
    const TestMatrix q4 = make_matrix(DType::kQ4_0, {17, 64, 1}, 3);
    const PackedWeights packed = pack_weights(q4.view);
    EXPECT_EQ(packed.layout, WeightLayout::kQ4_0x16);
    EXPECT_EQ(packed.num_groups, 2);
    EXPECT_EQ(packed.group_bytes, 2 * kQ4_0x16BlockBytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(packed.data.get()) % 64, 0u);
    // Row 16 is lane 0 of group 1; lanes 1..15 of that group are padding with zero scales.
    const uint8_t* group = packed.group(1);
    EXPECT_EQ(std::memcmp(group, q4.view.row(16), 2), 0);
    for (int lane = 1; lane < 16; ++lane) EXPECT_EQ(group[lane * 2] | group[lane * 2 + 1], 0);
    EXPECT_EQ(pack_weights(make_matrix(DType::kBF16, {2, 256, 1}, 4).view).layout, WeightLayout::kRowMajor);
    EXPECT_EQ(pack_weights(q4.view, /*enable=*/false).layout, WeightLayout::kRowMajor);
}

// Q6_Kx16 keeps Q6_K's 210 bytes per 256 values and each row's d in its lane.
TEST(PackedWeights, Q6_KLayout) {
    const TestMatrix q6 = make_matrix(DType::kQ6_K, {17, 512, 1}, 5);
    const PackedWeights packed = pack_weights(q6.view);
    EXPECT_EQ(packed.layout, WeightLayout::kQ6_Kx16);
    EXPECT_EQ(kQ6_Kx16BlockBytes, 16 * 210);
    EXPECT_EQ(packed.num_groups, 2);
    EXPECT_EQ(packed.group_bytes, 2 * kQ6_Kx16BlockBytes);
    // Row 3's second super-block: d at lane 3 of the group's second group-block.
    EXPECT_EQ(std::memcmp(packed.group(0) + kQ6_Kx16BlockBytes + 3 * 2, q6.view.row(3) + 210 + 208, 2), 0);
    EXPECT_EQ(std::string(weight_layout_name(packed.layout)), "q6_Kx16");
}

// Q4_Kx16 and Q5_Kx16 keep ggml's bytes per 256 values, each row's d and dmin in its lane and its 12 packed scale
// bytes as three 4-byte words.
TEST(PackedWeights, Q4_KAndQ5_KLayouts) {
    for (DType type : {DType::kQ4_K, DType::kQ5_K}) {
        SCOPED_TRACE(dtype_name(type));
        const TestMatrix matrix = make_matrix(type, {20, 512, 1}, 6);
        const PackedWeights packed = pack_weights(matrix.view);
        const int64_t row_block = dtype_traits(type).block_bytes;
        EXPECT_EQ(packed.layout, type == DType::kQ4_K ? WeightLayout::kQ4_Kx16 : WeightLayout::kQ5_Kx16);
        EXPECT_EQ(packed.group_bytes, 2 * 16 * row_block);
        // Row 19 is lane 3 of group 1; its second super-block's header.
        const uint8_t* block = packed.group(1) + 16 * row_block;
        const uint8_t* row = matrix.view.row(19) + row_block;
        EXPECT_EQ(std::memcmp(block + 3 * 2, row, 2), 0);                             // d
        EXPECT_EQ(std::memcmp(block + kQ4_Kx16MinScalesOffset + 3 * 2, row + 2, 2), 0);  // dmin
        for (int word = 0; word < 3; ++word) {
            EXPECT_EQ(std::memcmp(block + kQ4_Kx16ScaleWordsOffset + word * 64 + 3 * 4, row + 4 + 4 * word, 4), 0);
        }
    }
}

// A pool packs row groups side by side: the same bytes as one thread, for every packed type, with a last group
// that is only partly rows (its padding lanes zero either way).
TEST(PackedWeights, PoolPacksTheSameBytes) {
    ThreadPool pool(3);
    for (DType type : {DType::kQ4_0, DType::kQ8_0, DType::kQ5_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
        SCOPED_TRACE(dtype_name(type));
        const TestMatrix matrix = make_matrix(type, {83, 512, 1}, 8);
        const PackedWeights alone = pack_weights(matrix.view);
        const PackedWeights pooled = pack_weights(matrix.view, true, nullptr, &pool);
        ASSERT_EQ(alone.group_bytes, pooled.group_bytes);
        ASSERT_EQ(alone.num_groups, pooled.num_groups);
        const auto bytes = static_cast<size_t>(alone.num_groups * alone.group_bytes);
        EXPECT_EQ(std::memcmp(alone.data.get(), pooled.data.get(), bytes), 0);
    }
}

}  // namespace
}  // namespace tern::kernels
