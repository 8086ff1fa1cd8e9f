// Randomized add / abort / step runs of the engine with priorities, shared prefixes and a KV pool too small for the
// load, so that running requests are preempted (also by more important arrivals, after they were planned in the same
// step) and resumed from the prefix cache. At temperature 0 every token a request gets must equal the token of its
// alone-run: a block served from the prefix cache whose KV was never written shows up as a different token. A quarter
// of the requests ask for prompt log-probabilities, which must equal the alone-run's whatever chunks and preemptions
// came between. Every other seed decodes speculatively (prompt-lookup drafts, or in every fourth the model itself as a
// draft model, whose drafts must then be nearly all accepted), which must change no token. The KV
// manager's invariants are checked after every step, and the run ends with every block free.
#include <gtest/gtest.h>

#include <filesystem>

#include <cstdio>
#include <map>
#include <random>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "synth/synth.h"

namespace tern::engine {
namespace {

constexpr int kBlockSize = 4;
constexpr int kMaxTokens = 10;
constexpr int kMaxPromptLogprobs = 2;

struct AloneRun {
    std::vector<int32_t> tokens;
    std::vector<TokenLogprobs> prompt_logprobs;  // with kMaxPromptLogprobs alternatives
};

// Greedy continuations of prompts, each run alone through an engine of its own configuration with prefix caching off.
class AloneRuns {
public:
    AloneRuns(Model& model, ThreadPool& pool) {
        EngineConfig config;
        config.block_size = kBlockSize;  // attention walks keys one block at a time: the same blocks, the same bits
        config.kv_cache_bytes = 16 << 20;
        config.enable_prefix_caching = false;
        auto engine = Engine::create(model, pool, config);
        TERN_CHECK(engine.is_ok()) << engine.status().message();
        engine_ = std::move(engine.value());
    }

    // The first kMaxTokens tokens `prompt` gets alone, and its prompt log-probabilities.
    const AloneRun& run(const std::vector<int32_t>& prompt) {
        auto found = cache_.find(prompt);
        if (found != cache_.end()) return found->second;
        EngineRequest request{.id = 0, .prompt = prompt, .max_tokens = kMaxTokens,
                              .num_prompt_logprobs = kMaxPromptLogprobs};
        request.sampling.temperature = 0.0f;
        const Status added = engine_->add_request(request);
        TERN_CHECK(added.is_ok()) << added.message();
        AloneRun run;
        while (engine_->has_unfinished_requests()) {
            auto outputs = engine_->step();
            TERN_CHECK(outputs.is_ok()) << outputs.status().message();
            for (RequestOutput& output : outputs.value()) {
                if (output.token) run.tokens.push_back(*output.token);
                if (output.prompt_logprobs) run.prompt_logprobs = std::move(*output.prompt_logprobs);
            }
        }
        return cache_.emplace(prompt, std::move(run)).first->second;
    }

private:
    std::unique_ptr<Engine> engine_;
    std::map<std::vector<int32_t>, AloneRun> cache_;
};

class EngineSimulation {
public:
    EngineSimulation(Model& model, ThreadPool& pool, AloneRuns& alone, uint32_t seed) : rng_(seed), alone_(alone) {
        EngineConfig config;
        config.block_size = kBlockSize;
        config.scheduling_policy = SchedulingPolicy::kPriority;
        const int num_blocks = uniform(12, 40);  // a request needs up to 10 blocks of 4 tokens
        const bool draft_model = seed % 4 == 0;  // its KV shares each block
        config.kv_cache_bytes = static_cast<uint64_t>((num_blocks + 1) * (draft_model ? 2 : 1) *
                                                      KvCache::bytes_per_block(model.hparams(), kBlockSize, config.kv_type));
        config.max_batched_tokens = uniform(4, 20);
        config.max_running = uniform(2, 8);
        config.max_queued_requests = 8;
        // Every other seed with speculative decoding (any repeated token proposes, in batches of any size): its
        // tokens must equal the alone-runs without it, and the prefix cache must never serve a rejected draft's KV.
        if (seed % 2 == 0) {
            config.speculative = {.num_speculative_tokens = uniform(1, 4),
                                  .method = draft_model ? DraftMethod::kDraftModel : DraftMethod::kNgram,
                                  .ngram = {.min_n = 1, .max_n = 3},
                                  // A draft model's KV lags while the batch is too large to draft: it catches up.
                                  .disable_by_batch_size = draft_model ? uniform(1, 3) : 64,
                                  .min_tokens_per_verification = draft_model ? 1.0 : 0.0};  // self-drafts pay nothing
        }
        auto engine = Engine::create(model, pool, config, draft_model ? &model : nullptr);
        TERN_CHECK(engine.is_ok()) << engine.status().message();
        engine_ = std::move(engine.value());
        for (int idx = 0; idx < 3; ++idx) prefixes_.push_back(random_tokens(24));
        for (int idx = 0; idx < 4; ++idx) tails_.push_back(random_tokens(12));
    }

    // One random operation; returns false once a check failed.
    bool op() {
        const int choice = uniform(0, 9);
        if (choice < 4) {
            add();
        } else if (choice == 4 && !live_.empty()) {
            abort_one();
        } else {
            step();
        }
        return !::testing::Test::HasFailure();
    }

    void drain() {
        for (int idx = 0; idx < 5000 && engine_->has_unfinished_requests(); ++idx) step();
        EXPECT_FALSE(engine_->has_unfinished_requests()) << "the engine stopped making progress";
        EXPECT_TRUE(live_.empty());
        EXPECT_GT(num_prompt_logprobs_checked_, 0) << "no request reported prompt log-probabilities";
        EXPECT_EQ(engine_->stats().kv_usage, 0.0) << "leaked blocks";
    }

    int64_t num_steps() const { return num_steps_; }
    EngineStats stats() const { return engine_->stats(); }

private:
    struct Live {
        std::vector<int32_t> prompt;
        std::vector<int32_t> tokens;
        int max_tokens;
        int num_prompt_logprobs;
        bool prompt_logprobs_seen = false;
    };

    int uniform(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }
    std::vector<int32_t> random_tokens(int count) {
        std::vector<int32_t> tokens(static_cast<size_t>(count));
        for (int32_t& token : tokens) token = uniform(3, 300);
        return tokens;
    }

    // Prompts come from a small set (prefix x cut x tail x tail length), so that many share prefixes and the
    // alone-runs are few. Half the requests are long and unimportant (prefilled over several steps), half short and
    // urgent: an urgent arrival preempts a long request in the middle of its prefill, after the step that was to
    // compute its next chunk was planned.
    void add() {
        const bool urgent = uniform(0, 1) == 0;
        std::vector<int32_t> prompt = prefixes_[static_cast<size_t>(uniform(0, 2))];
        prompt.resize(static_cast<size_t>(urgent ? 4 * uniform(0, 2) : 4 * uniform(3, 6)));
        const auto& tail = tails_[static_cast<size_t>(uniform(0, 3))];
        prompt.insert(prompt.end(), tail.begin(), tail.begin() + (urgent ? uniform(1, 4) : 4 * uniform(0, 2) + 1));
        EngineRequest request{.id = next_id_++, .prompt = prompt, .max_tokens = uniform(1, kMaxTokens),
                              .priority = urgent ? uniform(0, 1) : 2};
        request.num_prompt_logprobs = uniform(0, 3) == 0 ? uniform(0, kMaxPromptLogprobs) : -1;
        request.sampling.temperature = 0.0f;
        const Status added = engine_->add_request(request);
        if (added.code() == StatusCode::kResourceExhausted) return;  // the waiting queue is full
        ASSERT_TRUE(added.is_ok()) << added.message();
        live_[request.id] = Live{std::move(prompt), {}, request.max_tokens, request.num_prompt_logprobs};
    }

    void abort_one() {
        auto it = live_.begin();
        std::advance(it, uniform(0, static_cast<int>(live_.size()) - 1));
        ASSERT_TRUE(engine_->abort(it->first).is_ok());
        live_.erase(it);
    }

    void step() {
        auto outputs = engine_->step();
        ASSERT_TRUE(outputs.is_ok()) << outputs.status().message();
        ++num_steps_;
        for (const RequestOutput& output : outputs.value()) check_output(output);
        const Status verified = engine_->verify();
        ASSERT_TRUE(verified.is_ok()) << "after step " << num_steps_ << ": " << verified.message();
    }

    void check_output(const RequestOutput& output) {
        auto found = live_.find(output.id);
        if (found == live_.end()) {
            EXPECT_EQ(output.finish_reason, FinishReason::kAbort) << "output for request " << output.id;
            return;
        }
        Live& live = found->second;
        check_prompt_logprobs(output, live);
        if (output.token) {
            const std::vector<int32_t>& expected = alone_.run(live.prompt).tokens;
            const size_t position = live.tokens.size();
            ASSERT_LT(position, expected.size());
            ASSERT_EQ(*output.token, expected[position])
                << "request " << output.id << " token " << position << " differs from its alone-run (step "
                << num_steps_ << ", prompt of " << live.prompt.size() << " tokens)";
            live.tokens.push_back(*output.token);
        }
        if (output.finish_reason) {
            EXPECT_EQ(*output.finish_reason, FinishReason::kLength);
            EXPECT_EQ(live.prompt_logprobs_seen, live.num_prompt_logprobs >= 0) << "request " << output.id;
            EXPECT_EQ(live.tokens.size(), static_cast<size_t>(live.max_tokens));
            live_.erase(found);
        }
    }

    // Once, with the first token, equal to the alone-run's (its alternatives cut to the count asked for).
    void check_prompt_logprobs(const RequestOutput& output, Live& live) {
        if (!output.prompt_logprobs) return;
        ASSERT_GE(live.num_prompt_logprobs, 0) << "request " << output.id << " did not ask for them";
        ASSERT_FALSE(live.prompt_logprobs_seen) << "request " << output.id << " got them twice";
        ASSERT_TRUE(output.token && live.tokens.empty()) << "request " << output.id << ": not with the first token";
        live.prompt_logprobs_seen = true;
        const std::vector<TokenLogprobs>& expected = alone_.run(live.prompt).prompt_logprobs;
        ASSERT_EQ(output.prompt_logprobs->size(), expected.size());
        for (size_t idx = 0; idx < expected.size(); ++idx) {
            const TokenLogprobs& got = (*output.prompt_logprobs)[idx];
            ASSERT_EQ(got.logprob, expected[idx].logprob) << "request " << output.id << " prompt position " << idx + 1;
            ASSERT_EQ(got.rank, expected[idx].rank);
            const auto top_end = expected[idx].top.begin() + live.num_prompt_logprobs;
            ASSERT_EQ(got.top, std::vector(expected[idx].top.begin(), top_end));
        }
        ++num_prompt_logprobs_checked_;
    }

    std::mt19937 rng_;
    AloneRuns& alone_;
    std::unique_ptr<Engine> engine_;
    std::vector<std::vector<int32_t>> prefixes_;
    std::vector<std::vector<int32_t>> tails_;
    std::map<RequestId, Live> live_;
    RequestId next_id_ = 1;
    int64_t num_steps_ = 0;
    int64_t num_prompt_logprobs_checked_ = 0;
};

TEST(EngineRandom, PrioritiesPreemptionAndPrefixCacheMatchAloneRuns) {
    std::filesystem::create_directories(TERN_TEST_TMP);
    ThreadPool pool(2);
    const std::string path = std::string(TERN_TEST_TMP) + "/engine-random-q8_0.gguf";
    ASSERT_TRUE(write_synth_model(*find_preset("tiny"), SynthOptions{DType::kQ8_0, 5}, path, &pool).is_ok());
    auto model = Model::load(path);
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    AloneRuns alone(*model.value(), pool);
    int64_t total_steps = 0;
    int64_t preemptions = 0;
    int64_t hit_tokens = 0;
    int64_t accepted_drafts = 0;
    int64_t model_draft_tokens = 0;
    int64_t model_drafts_accepted = 0;
    uint32_t seed = 1;
    for (; total_steps < 10000; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        EngineSimulation simulation(*model.value(), pool, alone, seed);
        for (int op = 0; op < 3000; ++op) {
            if (!simulation.op()) return;
        }
        simulation.drain();
        if (HasFailure()) return;
        total_steps += simulation.num_steps();
        preemptions += simulation.stats().num_preemptions;
        hit_tokens += simulation.stats().prefix_cache.num_hit_tokens;
        accepted_drafts += simulation.stats().num_accepted_draft_tokens;
        if (seed % 4 == 0) {
            model_draft_tokens += simulation.stats().num_draft_tokens;
            model_drafts_accepted += simulation.stats().num_accepted_draft_tokens;
        }
    }
    std::printf("%lld steps over %u seeds: %lld preemptions, %lld prompt tokens from the prefix cache, %lld drafts "
                "accepted (the draft model's: %lld of %lld)\n", static_cast<long long>(total_steps), seed - 1,
                static_cast<long long>(preemptions), static_cast<long long>(hit_tokens),
                static_cast<long long>(accepted_drafts), static_cast<long long>(model_drafts_accepted),
                static_cast<long long>(model_draft_tokens));
    EXPECT_GT(accepted_drafts, 100) << "speculative decoding was meant to be exercised";
    // The model drafting for itself: its KV (mirrored, shared through the prefix cache, recomputed after preemption)
    // holds what the target's does, or its drafts would be rejected.
    ASSERT_GT(model_draft_tokens, 100) << "the draft model was meant to be exercised";
    EXPECT_GE(static_cast<double>(model_drafts_accepted) / static_cast<double>(model_draft_tokens), 0.9)
        << model_drafts_accepted << " of " << model_draft_tokens << " of the draft model's drafts accepted";
    EXPECT_GT(preemptions, 50) << "the pools were meant to be short";
    EXPECT_GT(hit_tokens, 1000) << "the prompts were meant to share prefixes";
}

}  // namespace
}  // namespace tern::engine
