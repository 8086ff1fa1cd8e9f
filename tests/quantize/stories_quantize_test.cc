// stories260K quantized and evaluated on held-out text: Q8_0 keeps perplexity within 1% of f32, Q4_0 drifts
// further, and the 172-wide ffn_down rows fall back to a type whose block fits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "eval/compare.h"
#include "eval/perplexity.h"
#include "formats/gguf.h"
#include "quantize/quantizer.h"
#include "test_files.h"
#include "tokenizer/tokenizer.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(TERN_SHARED_DIR) + "/models/stories260K/stories260K-f32.gguf";

class StoriesQuantize : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = testing::quantize_test_dir("stories");
        ThreadPool pool(2);
        for (QuantPreset preset : {QuantPreset::kQ8_0, QuantPreset::kQ4_0}) {
            auto summary = quantize_model(kModel, path(preset), QuantizeOptions{preset, {}}, &pool);
            ASSERT_TRUE(summary.is_ok()) << summary.status().message();
        }
        auto base = Model::load(kModel);
        ASSERT_TRUE(base.is_ok()) << base.status().message();
        auto tokenizer = Tokenizer::from_gguf(base.value()->file());
        ASSERT_TRUE(tokenizer.is_ok());
        std::ifstream stream(std::string(TERN_QUANTIZE_DATA_DIR) + "/heldout.txt");
        std::stringstream text;
        text << stream.rdbuf();
        tokens_ = tokenizer.value()->encode(text.str(), true, false);
        bos_ = tokenizer.value()->bos_id();
    }
    static std::string path(QuantPreset preset) {
        return (dir_ / ("stories260K-" + std::string(quant_preset_name(preset)) + ".gguf")).string();
    }
    static CompareResult compare(QuantPreset preset) {
        auto base = Model::load(kModel);
        auto quant = Model::load(path(preset));
        EXPECT_TRUE(base.is_ok() && quant.is_ok());
        ThreadPool pool(2);
        auto result = compare_models(*base.value(), *quant.value(), tokens_, 128, bos_, &pool);
        EXPECT_TRUE(result.is_ok()) << result.status().message();
        return result.is_ok() ? result.value() : CompareResult{};
    }
    static inline fs::path dir_;
    static inline std::vector<int32_t> tokens_;
    static inline int32_t bos_ = -1;
};

TEST_F(StoriesQuantize, HeldOutTextFillsSeveralWindows) {
    EXPECT_GE(tokens_.size(), 4u * 128u);
}

TEST_F(StoriesQuantize, Q8_0PerplexityWithinOnePercentOfF32) {
    const CompareResult result = compare(QuantPreset::kQ8_0);
    ASSERT_GT(result.num_scored, 0);
    // A trained model on in-domain text: far better than the 512-token uniform guess.
    EXPECT_LT(result.base.perplexity, 50.0);
    EXPECT_NEAR(result.quant.perplexity / result.base.perplexity, 1.0, 0.01);
    EXPECT_LT(result.kld_mean, 0.01);
    EXPECT_GT(result.top1_agreement, 0.9);
}

TEST_F(StoriesQuantize, Q4_0DriftsMoreThanQ8_0) {
    const CompareResult q8 = compare(QuantPreset::kQ8_0);
    const CompareResult q4 = compare(QuantPreset::kQ4_0);
    EXPECT_GT(q4.kld_mean, q8.kld_mean);
    EXPECT_GT(q4.kld_p99, q8.kld_p99);
    EXPECT_GT(q4.quant.perplexity, q4.base.perplexity);
}

TEST_F(StoriesQuantize, RowsOf172FallBackToF16) {
    auto file = GgufFile::open(path(QuantPreset::kQ4_0));
    ASSERT_TRUE(file.is_ok());
    int64_t checked = 0;
    for (const GgufTensorInfo& tensor : file.value()->tensors()) {
        if (tensor.dims.size() < 2) continue;
        if (tensor.dims[0] == 172) {
            EXPECT_EQ(tensor.type, DType::kF16) << tensor.name;
            ++checked;
        } else if (tensor.name == "output.weight") {
            EXPECT_EQ(tensor.type, DType::kQ8_0);  // q6_K's 256-blocks do not fit rows of 64
        } else {
            EXPECT_EQ(tensor.type, DType::kQ4_0) << tensor.name;
        }
    }
    EXPECT_EQ(checked, 5);  // one ffn_down per layer
}

}  // namespace
}  // namespace tern
