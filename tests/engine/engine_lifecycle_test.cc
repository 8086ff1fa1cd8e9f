// The engine's request lifecycle on a tiny synthetic model: finish reasons, aborts that free KV at once, admission
// rejections with reasons, timings, logprobs and the counters the server exports.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.h"
#include "synth/synth.h"
#include "synthetic_model_suite.h"

namespace tern::engine {
namespace {

class EngineLifecycle : public testing::SyntheticModelSuite<3> {
protected:
    std::unique_ptr<Engine> make_engine(EngineConfig config = {}) {
        if (config.kv_cache_bytes == 0) config.kv_cache_bytes = 16 << 20;
        auto engine = Engine::create(*model_, *pool_, config);
        EXPECT_TRUE(engine.is_ok()) << engine.status().message();
        return std::move(engine.value());
    }

    static EngineRequest greedy(RequestId id, int prompt_length, int max_tokens) {
        EngineRequest request{.id = id, .max_tokens = max_tokens};
        for (int idx = 0; idx < prompt_length; ++idx) request.prompt.push_back((idx * 31 + static_cast<int>(id)) % 500 + 3);
        request.sampling.temperature = 0.0f;
        return request;
    }

    // A draft model as large as the target (so that its drafts never pay), of another seed; nullptr on failure.
    static std::unique_ptr<Model> same_size_draft() {
        const std::string path = std::string(TERN_TEST_TMP) + "/lifecycle-draft-tiny-q8_0-4.gguf";
        if (!write_synth_model(*find_preset("tiny"), SynthOptions{DType::kQ8_0, 4}, path, pool_.get()).is_ok()) {
            return nullptr;
        }
        auto draft = Model::load(path);
        return draft.is_ok() ? std::move(draft.value()) : nullptr;
    }

    // Steps until nothing is left; returns every output in order.
    static std::vector<RequestOutput> drain(Engine& engine) {
        std::vector<RequestOutput> all;
        for (int guard = 0; guard < 10000 && engine.has_unfinished_requests(); ++guard) {
            auto outputs = engine.step();
            EXPECT_TRUE(outputs.is_ok());
            for (auto& output : outputs.value()) all.push_back(std::move(output));
        }
        auto last = engine.step();  // pending aborts
        for (auto& output : last.value()) all.push_back(std::move(output));
        return all;
    }
};

TEST_F(EngineLifecycle, LengthFinishReportsEveryTokenAndTimings) {
    auto engine = make_engine();
    ASSERT_TRUE(engine->add_request(greedy(1, 20, 6)).is_ok());
    const auto outputs = drain(*engine);
    ASSERT_EQ(outputs.size(), 6u);
    for (const auto& output : outputs) EXPECT_TRUE(output.token.has_value());
    ASSERT_TRUE(outputs.back().finish_reason.has_value());
    EXPECT_EQ(*outputs.back().finish_reason, FinishReason::kLength);
    const RequestTimings& timings = *outputs.back().timings;
    EXPECT_EQ(timings.token_times.size(), 6u);
    EXPECT_EQ(timings.num_prompt_tokens, 20);
    EXPECT_GE(timings.ttft_seconds(), timings.queue_seconds());
    EXPECT_GT(timings.tpot_seconds(), 0.0);
    EXPECT_EQ(timings.inter_token_seconds().size(), 5u);
    EXPECT_GE(timings.e2e_seconds(), timings.ttft_seconds());
    const EngineStats stats = engine->stats();
    EXPECT_EQ(stats.num_generated_tokens, 6);
    EXPECT_EQ(stats.num_prompt_tokens, 20);
    EXPECT_EQ(stats.num_running, 0);
    EXPECT_EQ(stats.kv_usage, 0.0);
}

// With prompt-lookup drafts a step may give a request several tokens: one output each, in order, the finish with
// the last; the tokens, their log-probabilities and the timings count as without drafts.
TEST_F(EngineLifecycle, SpeculativeStepsReportEveryTokenWithItsLogprobs) {
    EngineRequest request = greedy(1, 24, 40);
    request.num_top_logprobs = 2;
    auto plain_engine = make_engine();
    ASSERT_TRUE(plain_engine->add_request(request).is_ok());
    const auto plain = drain(*plain_engine);

    EngineConfig config;
    config.speculative = {.num_speculative_tokens = 4, .ngram = {.min_n = 1, .max_n = 3}};
    auto engine = make_engine(config);
    ASSERT_TRUE(engine->add_request(request).is_ok());
    const auto speculative = drain(*engine);
    const EngineStats stats = engine->stats();
    ASSERT_GT(stats.num_accepted_draft_tokens, 0) << "the random model's greedy text was meant to repeat";
    EXPECT_LT(stats.num_steps, plain_engine->stats().num_steps);

    ASSERT_EQ(speculative.size(), plain.size());
    for (size_t idx = 0; idx < plain.size(); ++idx) {
        EXPECT_EQ(speculative[idx].token, plain[idx].token) << idx;
        ASSERT_TRUE(speculative[idx].logprobs.has_value()) << idx;
        EXPECT_NEAR(speculative[idx].logprobs->logprob, plain[idx].logprobs->logprob, 1e-5) << idx;
        EXPECT_EQ(speculative[idx].logprobs->top.size(), 2u);
        EXPECT_EQ(speculative[idx].finish_reason.has_value(), idx + 1 == plain.size()) << idx;
    }
    EXPECT_EQ(speculative.back().timings->token_times.size(), 40u);
    EXPECT_EQ(stats.num_generated_tokens, 40);
    EXPECT_EQ(stats.kv_usage, 0.0);
    EXPECT_TRUE(engine->verify().is_ok());
}

// A draft model that does not pay (here one as large as the target, so that even all-accepted drafts cost more than
// they give) pauses for 32, 64, 128, ... output tokens after each judgement of 4 verifying steps: over 480 tokens it
// verifies at most 5 x 4 times (a fixed 32-token pause would give about 50), and the text is the plain one.
TEST_F(EngineLifecycle, DraftsThatDoNotPayPauseForLongerEachTime) {
    const std::unique_ptr<Model> draft = same_size_draft();
    ASSERT_NE(draft, nullptr);
    const EngineRequest request = greedy(1, 24, 480);  // the context is 512
    auto plain_engine = make_engine();
    const Status added = plain_engine->add_request(request);
    ASSERT_TRUE(added.is_ok()) << added.message();
    const auto plain = drain(*plain_engine);

    EngineConfig config;
    config.kv_cache_bytes = 32 << 20;
    config.speculative = {.num_speculative_tokens = 4, .method = DraftMethod::kDraftModel};
    auto engine = Engine::create(*model_, *pool_, config, draft.get());
    ASSERT_TRUE(engine.is_ok()) << engine.status().message();
    ASSERT_TRUE(engine.value()->add_request(request).is_ok());
    const auto drafted = drain(*engine.value());
    ASSERT_EQ(drafted.size(), plain.size());
    for (size_t idx = 0; idx < plain.size(); ++idx) EXPECT_EQ(drafted[idx].token, plain[idx].token) << idx;
    const EngineStats stats = engine.value()->stats();
    EXPECT_GE(stats.num_drafts, 4);
    EXPECT_LE(stats.num_drafts, 20);
}

// A draft model that does not pay for one request does not pay for the next: a new request starts paused as long as
// the last judged one was. Six 80-token requests one after another verify at most 16 times (about 48 if each judged
// its drafts anew: 4 verifying steps, a 32-token pause, 4 more, a 64-token pause).
TEST_F(EngineLifecycle, ANewRequestStartsWithTheLastDraftPause) {
    const std::unique_ptr<Model> draft = same_size_draft();
    ASSERT_NE(draft, nullptr);
    EngineConfig config;
    config.kv_cache_bytes = 32 << 20;
    config.speculative = {.num_speculative_tokens = 4, .method = DraftMethod::kDraftModel};
    auto engine = Engine::create(*model_, *pool_, config, draft.get());
    ASSERT_TRUE(engine.is_ok()) << engine.status().message();
    auto plain_engine = make_engine();
    for (RequestId id = 1; id <= 6; ++id) {
        ASSERT_TRUE(plain_engine->add_request(greedy(id, 24, 80)).is_ok());
        const auto plain = drain(*plain_engine);
        ASSERT_TRUE(engine.value()->add_request(greedy(id, 24, 80)).is_ok());
        const auto drafted = drain(*engine.value());
        ASSERT_EQ(drafted.size(), plain.size());
        for (size_t idx = 0; idx < plain.size(); ++idx) EXPECT_EQ(drafted[idx].token, plain[idx].token) << idx;
    }
    const EngineStats stats = engine.value()->stats();
    EXPECT_GE(stats.num_drafts, 4);
    EXPECT_LE(stats.num_drafts, 16);
}

TEST_F(EngineLifecycle, StopTokenEndsTheRequestAndIsItsLastToken) {
    auto engine = make_engine();
    ASSERT_TRUE(engine->add_request(greedy(1, 12, 8)).is_ok());
    const auto free_run = drain(*engine);
    const int32_t third = *free_run[2].token;
    EngineRequest request = greedy(1, 12, 8);
    request.stop_tokens = {third};
    ASSERT_TRUE(engine->add_request(request).is_ok());
    const auto stopped = drain(*engine);
    ASSERT_FALSE(stopped.empty());
    EXPECT_EQ(*stopped.back().finish_reason, FinishReason::kStop);
    EXPECT_EQ(*stopped.back().token, third);
    EXPECT_LE(stopped.size(), 3u);
}

TEST_F(EngineLifecycle, AbortFreesBlocksAtOnceAndReportsAbort) {
    auto engine = make_engine();
    ASSERT_TRUE(engine->add_request(greedy(1, 40, 100)).is_ok());
    ASSERT_TRUE(engine->add_request(greedy(2, 40, 100)).is_ok());
    for (int idx = 0; idx < 3; ++idx) ASSERT_TRUE(engine->step().is_ok());
    EXPECT_GT(engine->stats().kv_usage, 0.0);
    ASSERT_TRUE(engine->abort(1).is_ok());
    ASSERT_TRUE(engine->abort(2).is_ok());
    EXPECT_EQ(engine->stats().kv_usage, 0.0);
    EXPECT_FALSE(engine->has_unfinished_requests());
    EXPECT_EQ(engine->abort(1).code(), StatusCode::kNotFound);
    auto outputs = engine->step();
    ASSERT_TRUE(outputs.is_ok());
    ASSERT_EQ(outputs.value().size(), 2u);
    for (const auto& output : outputs.value()) EXPECT_EQ(*output.finish_reason, FinishReason::kAbort);
}

TEST_F(EngineLifecycle, RejectsWhatCanNeverFitAndBadInput) {
    EngineConfig config;
    config.max_model_len = 64;
    config.max_queued_requests = 2;
    auto engine = make_engine(config);
    const Status too_long = engine->add_request(greedy(1, 60, 10));
    EXPECT_EQ(too_long.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(too_long.message().find("context length"), std::string::npos) << too_long.message();
    EngineRequest bad_token = greedy(2, 4, 4);
    bad_token.prompt[1] = 1 << 20;
    EXPECT_NE(engine->add_request(bad_token).message().find("vocabulary"), std::string::npos);
    EngineRequest bad_sampling = greedy(3, 4, 4);
    bad_sampling.sampling.top_p = 2.0f;
    EXPECT_EQ(engine->add_request(bad_sampling).code(), StatusCode::kInvalidArgument);
    ASSERT_TRUE(engine->add_request(greedy(4, 4, 4)).is_ok());
    ASSERT_TRUE(engine->add_request(greedy(5, 4, 4)).is_ok());
    EXPECT_EQ(engine->add_request(greedy(6, 4, 4)).code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(engine->add_request(greedy(4, 4, 4)).code(), StatusCode::kInvalidArgument) << "duplicate id";
    const auto outputs = drain(*engine);
    EXPECT_EQ(outputs.size(), 8u);
}

TEST_F(EngineLifecycle, LogprobsAreConsistent) {
    auto engine = make_engine();
    EngineRequest request = greedy(1, 10, 4);
    request.num_top_logprobs = 3;
    ASSERT_TRUE(engine->add_request(request).is_ok());
    for (const auto& output : drain(*engine)) {
        ASSERT_TRUE(output.logprobs.has_value());
        ASSERT_EQ(output.logprobs->top.size(), 3u);
        // Greedy: the sampled token is the most likely one and its log-probability is the top one's.
        EXPECT_EQ(output.logprobs->top[0].first, *output.token);
        EXPECT_NEAR(output.logprobs->top[0].second, output.logprobs->logprob, 1e-4);
        EXPECT_LE(output.logprobs->logprob, 0.0f);
        EXPECT_GE(output.logprobs->top[0].second, output.logprobs->top[1].second);
    }
}

// vLLM's default policy: arrival order only, so a client cannot jump the queue or preempt others by sending a
// priority (issue #17). The engine refuses a non-zero priority rather than silently dropping it.
TEST_F(EngineLifecycle, FcfsIsTheDefaultAndRefusesPriority) {
    EngineConfig config;
    config.max_running = 1;
    auto engine = make_engine(config);
    EngineRequest urgent = greedy(2, 8, 3);
    urgent.priority = -1;
    const Status refused = engine->add_request(urgent);
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.message().find("priority"), std::string::npos) << refused.message();
    EXPECT_FALSE(engine->has_unfinished_requests());
    ASSERT_TRUE(engine->add_request(greedy(1, 8, 3)).is_ok());
    ASSERT_TRUE(engine->add_request(greedy(2, 8, 3)).is_ok());
    const auto outputs = drain(*engine);
    ASSERT_FALSE(outputs.empty());
    EXPECT_EQ(outputs.front().id, 1) << "first come, first served";
    EXPECT_EQ(outputs.back().id, 2);
}

TEST_F(EngineLifecycle, PriorityClassGoesFirstWhenOnlyOneFits) {
    EngineConfig config;
    config.max_running = 1;
    config.scheduling_policy = SchedulingPolicy::kPriority;
    auto engine = make_engine(config);
    ASSERT_TRUE(engine->add_request(greedy(1, 8, 3)).is_ok());
    EngineRequest urgent = greedy(2, 8, 3);
    urgent.priority = -1;
    ASSERT_TRUE(engine->add_request(urgent).is_ok());
    const auto outputs = drain(*engine);
    ASSERT_FALSE(outputs.empty());
    EXPECT_EQ(outputs.front().id, 2);
    EXPECT_EQ(outputs.back().id, 1);
}

}  // namespace
}  // namespace tern::engine
