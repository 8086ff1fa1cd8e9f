// AWQ-style calibration on stories260K: statistics from one text, quality measured on another (held-out) text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "eval/compare.h"
#include "quantize/calibration.h"
#include "quantize/quantizer.h"
#include "tokenizer/tokenizer.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(TERN_SHARED_DIR) + "/models/stories260K/stories260K-f32.gguf";

std::vector<int32_t> tokenize(const Tokenizer& tokenizer, const std::string& name) {
    std::ifstream stream(std::string(TERN_QUANTIZE_DATA_DIR) + "/" + name);
    std::stringstream text;
    text << stream.rdbuf();
    return tokenizer.encode(text.str(), true, false);
}

TEST(StoriesCalibration, CalibratedQ4_0BeatsPlainQ4_0OnHeldOutText) {
    const fs::path dir = fs::path(TERN_TEST_TMP) / "quantize" / ("stories-calib-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    auto file = GgufFile::open(kModel);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    auto tokenizer = Tokenizer::from_gguf(*file.value());
    ASSERT_TRUE(tokenizer.is_ok());
    ThreadPool pool(2);
    auto stats = collect_activation_stats(*file.value(), tokenize(*tokenizer.value(), "calib.txt"), 128,
                                          tokenizer.value()->bos_id(), &pool);
    ASSERT_TRUE(stats.is_ok()) << stats.status().message();
    const std::string plain = (dir / "q4_0.gguf").string();
    const std::string calibrated = (dir / "q4_0-calib.gguf").string();
    ASSERT_TRUE(quantize_model(kModel, plain, QuantizeOptions{QuantPreset::kQ4_0, {}}, &pool).is_ok());
    auto summary = quantize_model(kModel, calibrated, QuantizeOptions{QuantPreset::kQ4_0, {}, &stats.value()}, &pool);
    ASSERT_TRUE(summary.is_ok()) << summary.status().message();
    EXPECT_FALSE(summary.value().calib_alphas.empty());
    const std::vector<int32_t> heldout = tokenize(*tokenizer.value(), "heldout.txt");
    auto base = Model::load(kModel);
    auto plain_model = Model::load(plain);
    auto calibrated_model = Model::load(calibrated);
    ASSERT_TRUE(base.is_ok() && plain_model.is_ok() && calibrated_model.is_ok());
    auto plain_result =
        compare_models(*base.value(), *plain_model.value(), heldout, 128, tokenizer.value()->bos_id(), &pool);
    auto calib_result =
        compare_models(*base.value(), *calibrated_model.value(), heldout, 128, tokenizer.value()->bos_id(), &pool);
    ASSERT_TRUE(plain_result.is_ok() && calib_result.is_ok());
    std::cerr << "plain: ppl " << plain_result.value().quant.perplexity << " kld " << plain_result.value().kld_mean
              << "; calibrated: ppl " << calib_result.value().quant.perplexity << " kld "
              << calib_result.value().kld_mean << "; base ppl " << plain_result.value().base.perplexity << "\n";
    EXPECT_LT(calib_result.value().kld_mean, plain_result.value().kld_mean);
    EXPECT_LT(calib_result.value().quant.perplexity, plain_result.value().quant.perplexity);
}

}  // namespace
}  // namespace tern
