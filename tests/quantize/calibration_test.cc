// Activation statistics on a synthetic model: what is gathered, its GGUF round trip, and that a calibrated
// quantization stays a faithful copy of the model.
#include "quantize/calibration.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "eval/compare.h"
#include "quantize/quantizer.h"
#include "synth/synth.h"
#include "test_files.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

class CalibrationSynthetic : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = testing::quantize_test_dir("calib");
        ThreadPool pool(2);
        ASSERT_TRUE(write_synth_model(*find_preset("tiny"), SynthOptions{DType::kF32, 9}, path("f32"), &pool).is_ok());
    }
    static std::string path(const std::string& name) { return (dir_ / (name + ".gguf")).string(); }
    static std::vector<int32_t> tokens(int64_t count) { return testing::strided_tokens(count, 53); }
    static inline fs::path dir_;
};

TEST_F(CalibrationSynthetic, GathersEveryLinearInputAndRoundTrips) {
    auto file = GgufFile::open(path("f32"));
    ASSERT_TRUE(file.is_ok());
    ThreadPool pool(2);
    auto stats = collect_activation_stats(*file.value(), tokens(80), 32, 1, &pool);
    ASSERT_TRUE(stats.is_ok()) << stats.status().message();
    EXPECT_EQ(stats.value().num_tokens, 64);  // two whole windows of 32
    EXPECT_EQ(stats.value().inputs.size(), 3u * 4u);
    const ChannelStats& ffn = stats.value().inputs.at("blk.3.down_in");
    ASSERT_EQ(ffn.sum_abs.size(), 352u);
    for (size_t j = 0; j < ffn.sum_abs.size(); ++j) {
        EXPECT_GT(ffn.sum_abs[j], 0.0);
        // Cauchy-Schwarz: (sum |x|)^2 <= n * sum x^2.
        EXPECT_LE(ffn.sum_abs[j] * ffn.sum_abs[j], 64.0 * ffn.sum_squares[j] * (1.0 + 1e-6));
    }
    ASSERT_TRUE(save_activation_stats(stats.value(), path("stats")).is_ok());
    auto loaded = load_activation_stats(path("stats"));
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    EXPECT_EQ(loaded.value().num_tokens, 64);
    ASSERT_EQ(loaded.value().inputs.size(), stats.value().inputs.size());
    EXPECT_NEAR(loaded.value().inputs.at("blk.0.attn_in").sum_squares[5],
                stats.value().inputs.at("blk.0.attn_in").sum_squares[5],
                1e-4 * stats.value().inputs.at("blk.0.attn_in").sum_squares[5]);
    EXPECT_FALSE(load_activation_stats(path("f32")).is_ok());  // a model is not a statistics file
    EXPECT_FALSE(collect_activation_stats(*file.value(), tokens(10), 32, 1, &pool).is_ok());
}

TEST_F(CalibrationSynthetic, CalibratedQ8_0StaysCloseToTheModel) {
    auto file = GgufFile::open(path("f32"));
    ASSERT_TRUE(file.is_ok());
    ThreadPool pool(2);
    auto stats = collect_activation_stats(*file.value(), tokens(128), 64, 1, &pool);
    ASSERT_TRUE(stats.is_ok());
    QuantizeOptions options{QuantPreset::kQ8_0, {}, &stats.value()};
    auto summary = quantize_model(path("f32"), path("q8_0-calib"), options, &pool);
    ASSERT_TRUE(summary.is_ok()) << summary.status().message();
    EXPECT_EQ(summary.value().calib_alphas.size(), 3u * 4u);
    auto base = Model::load(path("f32"));
    auto quant = Model::load(path("q8_0-calib"));
    ASSERT_TRUE(base.is_ok() && quant.is_ok());
    auto result = compare_models(*base.value(), *quant.value(), tokens(128), 64, 1, &pool);
    ASSERT_TRUE(result.is_ok());
    // Scales folded the wrong way round would change the function, not just add rounding error.
    EXPECT_LT(result.value().kld_mean, 1e-3);
    EXPECT_GT(result.value().top1_agreement, 0.9);
}

}  // namespace
}  // namespace tern
