// Perplexity bookkeeping (windows, statistics, KL divergence) and model comparison on a synthetic model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "eval/compare.h"
#include "eval/perplexity.h"
#include "test_files.h"
#include "quantize/quantizer.h"
#include "synth/synth.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

TEST(NllStats, MatchesHandComputedMeanAndError) {
    NllStats stats;
    for (double nll : {1.0, 2.0, 3.0, 4.0}) stats.add(nll);
    EXPECT_DOUBLE_EQ(stats.mean(), 2.5);
    EXPECT_NEAR(stats.perplexity(), std::exp(2.5), 1e-9);
    // Population variance 1.25; error of the mean sqrt(1.25 / 3), scaled by the perplexity.
    EXPECT_NEAR(stats.perplexity_error(), std::exp(2.5) * std::sqrt(1.25 / 3.0), 1e-9);
}

TEST(Windows, NonOverlappingAndPartialWindowDropped) {
    EXPECT_EQ(window_starts(300, 128), (std::vector<int64_t>{0, 128}));
    EXPECT_TRUE(window_starts(100, 128).empty());
}

TEST(KlDivergence, ZeroForEqualAndKnownForTwoOutcomes) {
    const std::vector<float> p = {0.0f, 1.0f, -2.0f};
    EXPECT_NEAR(kl_divergence(p, p), 0.0, 1e-12);
    // Shifting logits by a constant leaves the distribution unchanged.
    EXPECT_NEAR(kl_divergence(p, std::vector<float>{5.0f, 6.0f, 3.0f}), 0.0, 1e-9);
    // P = (0.5, 0.5), Q = (e/(1+e), 1/(1+e)).
    const double q0 = std::exp(1.0) / (1.0 + std::exp(1.0));
    const double expected = 0.5 * std::log(0.5 / q0) + 0.5 * std::log(0.5 / (1.0 - q0));
    EXPECT_NEAR(kl_divergence(std::vector<float>{0.0f, 0.0f}, std::vector<float>{1.0f, 0.0f}), expected, 1e-9);
    EXPECT_NEAR(log_probability(std::vector<float>{0.0f, 0.0f}, 1), std::log(0.5), 1e-12);
}

class EvalSynthetic : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = testing::quantize_test_dir("eval");
        ThreadPool pool(2);
        ASSERT_TRUE(write_synth_model(*find_preset("tiny"), SynthOptions{DType::kF32, 3}, path("f32"), &pool).is_ok());
        ASSERT_TRUE(quantize_model(path("f32"), path("q4_0"), QuantizeOptions{QuantPreset::kQ4_0, {}}, &pool).is_ok());
    }
    static std::string path(const std::string& name) { return (dir_ / (name + ".gguf")).string(); }
    static std::vector<int32_t> tokens(int64_t count) { return testing::strided_tokens(count, 37); }
    static inline fs::path dir_;
};

TEST_F(EvalSynthetic, PerplexityScoresSecondHalfOfEachWindow) {
    auto model = Model::load(path("f32"));
    ASSERT_TRUE(model.is_ok());
    ThreadPool pool(2);
    const std::vector<int32_t> ids = tokens(100);
    auto result = compute_perplexity(*model.value(), ids, 32, 1, &pool);
    ASSERT_TRUE(result.is_ok()) << result.status().message();
    EXPECT_EQ(result.value().num_windows, 3);
    EXPECT_EQ(result.value().num_scored, 3 * 15);
    // Random weights of std 0.02 give near-uniform predictions over the 1024 tokens.
    EXPECT_GT(result.value().perplexity, 900.0);
    EXPECT_LT(result.value().perplexity, 1150.0);
    EXPECT_GT(result.value().perplexity_error, 0.0);
    auto too_short = compute_perplexity(*model.value(), tokens(20), 32, 1, &pool);
    ASSERT_FALSE(too_short.is_ok());
    EXPECT_NE(too_short.status().message().find("20 tokens"), std::string::npos);
}

TEST_F(EvalSynthetic, CompareAgainstItselfAndAQuantizedCopy) {
    auto base = Model::load(path("f32"));
    auto same = Model::load(path("f32"));
    auto quant = Model::load(path("q4_0"));
    ASSERT_TRUE(base.is_ok() && same.is_ok() && quant.is_ok());
    ThreadPool pool(2);
    const std::vector<int32_t> ids = tokens(96);
    auto identical = compare_models(*base.value(), *same.value(), ids, 32, 1, &pool);
    ASSERT_TRUE(identical.is_ok()) << identical.status().message();
    EXPECT_NEAR(identical.value().kld_mean, 0.0, 1e-9);
    EXPECT_DOUBLE_EQ(identical.value().top1_agreement, 1.0);
    EXPECT_DOUBLE_EQ(identical.value().base.perplexity, identical.value().quant.perplexity);
    auto quantized = compare_models(*base.value(), *quant.value(), ids, 32, 1, &pool);
    ASSERT_TRUE(quantized.is_ok());
    EXPECT_GT(quantized.value().kld_mean, 0.0);
    EXPECT_GE(quantized.value().kld_p99, quantized.value().kld_mean);
    EXPECT_DOUBLE_EQ(quantized.value().base.perplexity, identical.value().base.perplexity);
    EXPECT_NE(quantized.value().quant.perplexity, quantized.value().base.perplexity);
    auto speed = measure_decode_speed(*quant.value(), ids, &pool);
    ASSERT_TRUE(speed.is_ok());
    EXPECT_GT(speed.value(), 0.0);
}

}  // namespace
}  // namespace tern
