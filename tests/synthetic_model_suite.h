// A test suite base for tests that need real weights and a real forward pass but no shared data: a synthetic `tiny`
// model (Q8_0) written under the build's test folder and loaded once for the whole suite, with a 2-thread pool.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "base/thread_pool.h"
#include "model/model.h"
#include "synth/synth.h"

namespace tern::testing {

template <uint64_t kSeed>
class SyntheticModelSuite : public ::testing::Test {
public:
    static void SetUpTestSuite() {
        pool_ = std::make_unique<ThreadPool>(2);
        std::filesystem::create_directories(TERN_TEST_TMP);
        const std::string path = std::string(TERN_TEST_TMP) + "/suite-tiny-q8_0-" + std::to_string(kSeed) + ".gguf";
        ASSERT_TRUE(write_synth_model(*find_preset("tiny"), SynthOptions{DType::kQ8_0, kSeed}, path, pool_.get()).is_ok());
        auto model = Model::load(path);
        ASSERT_TRUE(model.is_ok()) << model.status().message();
        model_ = std::move(model.value());
    }
    static void TearDownTestSuite() {
        model_.reset();
        pool_.reset();
    }

protected:
    static inline std::unique_ptr<ThreadPool> pool_;
    static inline std::unique_ptr<Model> model_;
};

}  // namespace tern::testing
