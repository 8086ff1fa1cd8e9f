// Batch invariance at temperature 0: each prompt's tokens are identical when it runs alone, in a batch of 16 mixed
// lengths, with chunked prefill (7-token steps), with and without prefix caching, after being preempted and
// recomputed, and with speculative decoding. stories260K (f32 weights) and a synthetic Q8_0 / Q4_0 model (the int8 kernels' batched paths).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <tuple>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "generate/generator.h"
#include "synth/synth.h"

namespace tern::engine {
namespace {

const std::string kModelDir = std::string(TERN_SHARED_DIR) + "/models/stories260K";

// 16 prompts of 3..37 tokens cut from the reference prompts and their continuations, so many share prefixes.
std::vector<std::vector<int32_t>> stories_prompts() {
    std::ifstream stream(kModelDir + "/reference.json");
    const auto reference = nlohmann::json::parse(stream);
    std::vector<std::vector<int32_t>> texts;
    for (const auto& prompt : reference["prompts"]) {
        auto tokens = prompt["prompt_tokens"].get<std::vector<int32_t>>();
        const auto continuation = prompt["greedy_tokens"].get<std::vector<int32_t>>();
        tokens.insert(tokens.end(), continuation.begin(), continuation.end());
        texts.push_back(tokens);
    }
    std::vector<std::vector<int32_t>> prompts;
    const int lengths[] = {3, 37, 5, 21, 16, 17, 9, 33, 4, 28, 12, 36, 19, 8, 25, 31};
    for (size_t idx = 0; idx < 16; ++idx) {
        const auto& text = texts[idx % texts.size()];
        prompts.emplace_back(text.begin(), text.begin() + lengths[idx]);
    }
    return prompts;
}

struct RunResult {
    std::map<RequestId, std::vector<int32_t>> tokens;
    EngineStats stats;
};

// Runs `prompts` (ids 0..n-1) through a fresh engine, all queued at once, greedy, `max_tokens` each.
RunResult run(Model& model, ThreadPool& pool, const EngineConfig& config,
              const std::vector<std::vector<int32_t>>& prompts, int max_tokens, Model* draft_model = nullptr) {
    auto engine = Engine::create(model, pool, config, draft_model);
    EXPECT_TRUE(engine.is_ok()) << engine.status().message();
    RunResult result;
    if (!engine.is_ok()) return result;
    for (size_t idx = 0; idx < prompts.size(); ++idx) {
        EngineRequest request{.id = static_cast<RequestId>(idx), .prompt = prompts[idx], .max_tokens = max_tokens};
        request.sampling.temperature = 0.0f;
        const Status added = engine.value()->add_request(request);
        EXPECT_TRUE(added.is_ok()) << added.message();
    }
    while (engine.value()->has_unfinished_requests()) {
        auto outputs = engine.value()->step();
        EXPECT_TRUE(outputs.is_ok()) << outputs.status().message();
        if (!outputs.is_ok()) break;
        for (const RequestOutput& output : outputs.value()) {
            if (output.token) result.tokens[output.id].push_back(*output.token);
            if (output.finish_reason) {
                EXPECT_EQ(*output.finish_reason, FinishReason::kLength);
            }
        }
    }
    result.stats = engine.value()->stats();
    return result;
}

// Each prompt alone, one engine run per prompt.
std::map<RequestId, std::vector<int32_t>> run_alone(Model& model, ThreadPool& pool, const EngineConfig& config,
                                                    const std::vector<std::vector<int32_t>>& prompts, int max_tokens) {
    std::map<RequestId, std::vector<int32_t>> alone;
    for (size_t idx = 0; idx < prompts.size(); ++idx) {
        alone[static_cast<RequestId>(idx)] = run(model, pool, config, {prompts[idx]}, max_tokens).tokens[0];
    }
    return alone;
}

void expect_invariant(Model& model, ThreadPool& pool, EngineConfig base, const std::vector<std::vector<int32_t>>& prompts,
                      int max_tokens) {
    const auto alone = run_alone(model, pool, base, prompts, max_tokens);
    for (const auto& [id, tokens] : alone) ASSERT_EQ(tokens.size(), static_cast<size_t>(max_tokens)) << id;

    const RunResult batched = run(model, pool, base, prompts, max_tokens);
    EXPECT_EQ(batched.tokens, alone) << "batch of 16";

    // Admitted over many steps, later prompts find the blocks earlier ones computed (a block is cached once its step
    // has run, so the batch of 16 above, admitted in one step, shares nothing).
    EngineConfig chunked = base;
    chunked.max_batched_tokens = 7;
    const RunResult chunked_run = run(model, pool, chunked, prompts, max_tokens);
    EXPECT_EQ(chunked_run.tokens, alone) << "7-token steps";
    EXPECT_GT(chunked_run.stats.prefix_cache.num_hit_tokens, 0) << "the prompts share prefixes";

    EngineConfig uncached = base;
    uncached.enable_prefix_caching = false;
    const RunResult no_cache = run(model, pool, uncached, prompts, max_tokens);
    EXPECT_EQ(no_cache.tokens, alone) << "no prefix cache";
    EXPECT_EQ(no_cache.stats.prefix_cache.num_hit_tokens, 0);

    // A pool of 12 blocks of 16 tokens cannot hold the 16 sequences at once: requests get preempted and recomputed.
    EngineConfig small = base;
    small.kv_cache_bytes = static_cast<uint64_t>(13 * KvCache::bytes_per_block(model.hparams(), 16, base.kv_type));
    const RunResult preempted = run(model, pool, small, prompts, max_tokens);
    EXPECT_EQ(preempted.tokens, alone) << "preempted";
    EXPECT_GT(preempted.stats.num_preemptions, 0);

    // Speculative decoding (prompt lookup, 4 drafts, any repeated token proposing): the same greedy tokens in a
    // batch, in 7-token steps (drafts cut short by the budget) and under preemption.
    const std::pair<const char*, EngineConfig> speculative_runs[] = {
        {"speculative", base}, {"speculative, 7-token steps", chunked}, {"speculative, preempted", small}};
    int64_t num_accepted = 0;
    for (auto [label, config] : speculative_runs) {
        config.speculative = {.num_speculative_tokens = 4, .ngram = {.min_n = 1, .max_n = 3},
                              .disable_by_batch_size = 64};
        const RunResult speculative = run(model, pool, config, prompts, max_tokens);
        EXPECT_EQ(speculative.tokens, alone) << label;
        EXPECT_GT(speculative.stats.num_draft_tokens, 0) << label;
        num_accepted += speculative.stats.num_accepted_draft_tokens;
    }
    EXPECT_GT(num_accepted, 0) << "no draft was ever accepted: the runs above prove little";

    // A draft model, here the model itself: its KV, mirrored from each step's batch into its own cache under the
    // target's block tables, must hold what the target's holds (prefix-cache hits and recomputation after preemption
    // included), so nearly every greedy draft is accepted; a stale slot would show as rejections, not wrong tokens.
    EngineConfig small_with_draft = small;
    small_with_draft.kv_cache_bytes *= 2;  // each block holds the draft's KV too
    // With drafts only while at most 2 requests run, the last ones' draft KV lags by more than a step's 7 tokens
    // when they start drafting, and catches up first.
    const std::tuple<const char*, EngineConfig, int> draft_runs[] = {
        {"draft model", base, 64}, {"draft model, 7-token steps", chunked, 64},
        {"draft model, preempted", small_with_draft, 64}, {"draft model, catching up", chunked, 2}};
    for (auto [label, config, max_drafting] : draft_runs) {
        config.speculative = {.num_speculative_tokens = 3, .method = DraftMethod::kDraftModel,
                              .disable_by_batch_size = max_drafting, .min_tokens_per_verification = 1.0};  // never pause
        const RunResult drafted = run(model, pool, config, prompts, max_tokens, &model);
        EXPECT_EQ(drafted.tokens, alone) << label;
        ASSERT_GT(drafted.stats.num_draft_tokens, 0) << label;
        EXPECT_GE(static_cast<double>(drafted.stats.num_accepted_draft_tokens) / drafted.stats.num_draft_tokens, 0.9)
            << label << ": " << drafted.stats.num_accepted_draft_tokens << " of " << drafted.stats.num_draft_tokens;
    }
}

TEST(EngineInvariance, Stories260KEveryKvType) {
    auto loaded = Model::load(kModelDir + "/stories260K-f32.gguf");
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    ThreadPool pool(2);
    const auto prompts = stories_prompts();
    for (KvType type : {KvType::kF16, KvType::kF32}) {
        SCOPED_TRACE(std::string(kv_type_name(type)));
        EngineConfig config;
        config.kv_type = type;
        config.kv_cache_bytes = 64 << 20;
        expect_invariant(*loaded.value(), pool, config, prompts, 24);
    }
}

// The engine's tokens for prompt `idx` are greedy generate()'s, which runs the model alone on a one-table cache.
void expect_generate_gives(Model& model, ThreadPool& pool, const RunResult& engine_run,
                           const std::vector<std::vector<int32_t>>& prompts, size_t idx, int max_tokens) {
    GenerationOptions options;
    options.max_new_tokens = max_tokens;
    options.sampling.temperature = 0.0f;
    auto generated = generate(model, pool, prompts[idx], options);
    ASSERT_TRUE(generated.is_ok());
    EXPECT_EQ(engine_run.tokens.at(static_cast<RequestId>(idx)), generated.value().tokens) << "prompt " << idx;
}

// With an f32 cache the engine's paged path gives what single-sequence generate() gives.
TEST(EngineInvariance, Stories260KMatchesGenerate) {
    auto loaded = Model::load(kModelDir + "/stories260K-f32.gguf");
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    ThreadPool pool(2);
    const auto prompts = stories_prompts();
    EngineConfig config;
    config.kv_type = KvType::kF32;
    config.kv_cache_bytes = 64 << 20;
    const RunResult batched = run(*loaded.value(), pool, config, prompts, 24);
    for (size_t idx = 0; idx < prompts.size(); ++idx) {
        expect_generate_gives(*loaded.value(), pool, batched, prompts, idx, 24);
    }
}

// Every architecture (qwen3's q/k head norms, gemma's and Mistral's sliding windows of 8, which the prompts of up to
// 50 tokens cross, included) and the int8 kernels' weight types.
TEST(EngineInvariance, SyntheticInt8Models) {
    ThreadPool pool(2);
    const std::pair<const char*, DType> models[] = {
        {"tiny", DType::kQ8_0}, {"tiny", DType::kQ4_0}, {"tiny-qwen2", DType::kQ8_0}, {"tiny-qwen3", DType::kQ8_0},
        {"tiny-qwen3moe", DType::kQ8_0}, {"tiny-qwen2moe", DType::kQ8_0}, {"tiny-phi3", DType::kQ8_0},
        {"tiny-phi3-128k", DType::kQ8_0}, {"tiny-gemma2", DType::kQ8_0}, {"tiny-gemma3", DType::kQ8_0},
        {"tiny-mixtral", DType::kQ8_0},
        {"tiny-mistral", DType::kQ8_0}};
    for (const auto& [preset, type] : models) {
        const std::string path = std::string(TERN_TEST_TMP) + "/engine-invariance-" + preset + "-" +
                                 std::string(dtype_name(type)) + ".gguf";
        ASSERT_TRUE(write_synth_model(*find_preset(preset), SynthOptions{type, 11}, path, &pool).is_ok());
        auto loaded = Model::load(path);
        ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
        SCOPED_TRACE(std::string(preset) + " " + std::string(dtype_name(type)));
        std::vector<std::vector<int32_t>> prompts;
        for (int idx = 0; idx < 16; ++idx) {
            std::vector<int32_t> prompt;
            for (int pos = 0; pos < 5 + 3 * idx; ++pos) prompt.push_back((pos * 7 + (idx % 3) * 13 + 1) % 200 + 3);
            prompts.push_back(prompt);
        }
        EngineConfig config;
        config.kv_cache_bytes = 64 << 20;
        expect_invariant(*loaded.value(), pool, config, prompts, 12);
        // The paged engine, whose sliding-window groups release their blocks (model/kv_groups.h), gives what
        // generate() gives on its one-table f32 cache that keeps every position.
        config.kv_type = KvType::kF32;
        const RunResult paged = run(*loaded.value(), pool, config, prompts, 12);
        for (size_t idx : {size_t{0}, size_t{7}, size_t{15}}) {
            expect_generate_gives(*loaded.value(), pool, paged, prompts, idx, 12);
        }
    }
}

}  // namespace
}  // namespace tern::engine
