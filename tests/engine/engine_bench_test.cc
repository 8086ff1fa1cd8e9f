// `tern bench engine` on a tiny synthetic model: the counts it reports, and a late long prompt that, chunked by a
// small budget, finishes after every other request and is still measured.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "engine_bench/engine_bench.h"
#include "synth/synth.h"

namespace tern::engine {
namespace {

class EngineBench : public ::testing::Test {
protected:
    void SetUp() override {
        const std::string path =
            std::string(TERN_TEST_TMP) + "/engine-bench-tiny-" + std::to_string(::getpid()) + ".gguf";
        ASSERT_TRUE(write_synth_model(*find_preset("tiny"), SynthOptions{DType::kQ8_0, 5}, path, &pool_).is_ok());
        auto loaded = Model::load(path);
        std::filesystem::remove(path);
        ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
        model_ = std::move(loaded.value());
    }

    EngineBenchOptions options(int64_t num_prompts, int64_t input_len, int64_t output_len) const {
        EngineBenchOptions bench_options;
        bench_options.workload.num_prompts = num_prompts;
        bench_options.workload.input = bench::LengthSpec::fixed(input_len);
        bench_options.workload.output = bench::LengthSpec::fixed(output_len);
        bench_options.workload.prompt_kind = bench::PromptKind::kTokenIds;
        bench_options.workload.vocab_size = model_->hparams().vocab_size;
        return bench_options;
    }

    ThreadPool pool_{1};
    std::unique_ptr<Model> model_;
};

TEST_F(EngineBench, CountsEveryRequestsTokens) {
    EngineConfig config;
    config.kv_cache_bytes = 16 << 20;
    auto engine = Engine::create(*model_, pool_, config);
    ASSERT_TRUE(engine.is_ok()) << engine.status().message();
    auto result = run_engine_bench(*engine.value(), model_->hparams().vocab_size, options(6, 20, 5));
    ASSERT_TRUE(result.is_ok()) << result.status().message();
    EXPECT_EQ(result.value().num_requests, 6);
    EXPECT_EQ(result.value().input_tokens, 6 * 20);
    EXPECT_EQ(result.value().output_tokens, 6 * 5);
    EXPECT_GT(result.value().output_tokens_per_s, 0.0);
    EXPECT_LT(result.value().late_ttft_ms, 0.0);  // there was no late prompt
}

TEST_F(EngineBench, LatePromptThatOutlastsTheOthersIsMeasured) {
    EngineConfig config;
    config.kv_cache_bytes = 16 << 20;
    config.max_batched_tokens = 8;  // 400 prompt tokens take 50 steps or more; the others need 3
    auto engine = Engine::create(*model_, pool_, config);
    ASSERT_TRUE(engine.is_ok()) << engine.status().message();
    EngineBenchOptions bench_options = options(2, 4, 3);
    bench_options.late_prompt_len = 400;
    bench_options.late_output_len = 2;
    auto result = run_engine_bench(*engine.value(), model_->hparams().vocab_size, bench_options);
    ASSERT_TRUE(result.is_ok()) << result.status().message();
    EXPECT_EQ(result.value().num_requests, 2);
    EXPECT_GE(result.value().late_ttft_ms, 0.0);
    EXPECT_GE(result.value().late_max_gap_others_ms, 0.0);
}

}  // namespace
}  // namespace tern::engine
