// logit_bias (OpenAI's, with llama-server's "never") and min_tokens (vLLM's) in the sampler: biases move the greedy
// choice, apply before the penalties, "never" holds at any temperature, and stop tokens wait for min_tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "sampling/sampler.h"
#include "sampling/sampling_test_util.h"

namespace tern {
namespace {

using sampling_test::draw_counts;
using sampling_test::random_logits;

constexpr float kInf = std::numeric_limits<float>::infinity();

SamplingParams greedy() {
    SamplingParams params;
    params.temperature = 0.0f;
    return params;
}

int32_t argmax(const std::vector<float>& logits) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST(SamplerLogitBias, MinusHundredBansTheGreedyTokenAndPlusHundredForcesOne) {
    const std::vector<float> logits = random_logits(300, 3);
    const int32_t best = argmax(logits);
    std::vector<float> without_best = logits;
    without_best[static_cast<size_t>(best)] = -kInf;

    SamplingParams banned = greedy();
    banned.logit_bias = {{best, -100.0f}};
    EXPECT_EQ(Sampler(banned, 300).sample(logits.data()), argmax(without_best)) << "the runner-up wins";

    const int32_t worst = static_cast<int32_t>(std::min_element(logits.begin(), logits.end()) - logits.begin());
    SamplingParams forced = greedy();
    forced.logit_bias = {{worst, 100.0f}};
    Sampler sampler(forced, 300);
    for (int step = 0; step < 5; ++step) {
        const int32_t token = sampler.sample(logits.data());
        EXPECT_EQ(token, worst);
        sampler.accept(token);
    }
}

TEST(SamplerLogitBias, SmallBiasesAddToTheLogit) {
    const std::vector<float> logits = {1.0f, 1.5f, 0.2f};
    SamplingParams params = greedy();
    params.logit_bias = {{0, 0.4f}};
    EXPECT_EQ(Sampler(params, 3).sample(logits.data()), 1) << "1.4 < 1.5";
    params.logit_bias = {{0, 0.3f}, {0, 0.3f}};  // the array form may repeat an id: the biases add up
    EXPECT_EQ(Sampler(params, 3).sample(logits.data()), 0) << "1.6 > 1.5";
}

// vLLM's order: bias first, then the penalties. Token 0 is in the history; with the bias added after the penalty it
// would win (1 / 2 + 1 = 1.5 > 1.2), added before it loses ((1 + 1) / 2 = 1.0 < 1.2).
TEST(SamplerLogitBias, AppliesBeforeThePenalties) {
    const std::vector<float> logits = {1.0f, 1.2f, 0.0f};
    SamplingParams params = greedy();
    params.repetition_penalty = 2.0f;
    params.logit_bias = {{0, 1.0f}};
    Sampler sampler(params, 3);
    sampler.accept_prompt({0});
    EXPECT_EQ(sampler.sample(logits.data()), 1);
}

TEST(SamplerLogitBias, NeverHoldsAtAnyTemperatureAndABanOfEverythingStillSamples) {
    const std::vector<float> logits = random_logits(50, 8, -1.0f, 1.0f);
    SamplingParams params;
    params.temperature = 1.5f;
    params.repetition_penalty = 1.3f;  // would turn a banned logit into -inf if it came after the ban
    params.seed = 11;
    for (int32_t token = 0; token < 10; ++token) params.logit_bias.emplace_back(token, -kInf);
    Sampler sampler(params, 50);
    sampler.accept_prompt({0, 1, 2});
    const std::vector<int64_t> counts = draw_counts(sampler, logits, 5000);
    for (int32_t token = 0; token < 10; ++token) EXPECT_EQ(counts[static_cast<size_t>(token)], 0) << token;

    SamplingParams everything = greedy();
    for (int32_t token = 0; token < 4; ++token) everything.logit_bias.emplace_back(token, -kInf);
    const std::vector<float> small = {0.5f, 2.0f, 1.0f, -1.0f};
    EXPECT_EQ(Sampler(everything, 4).sample(small.data()), 0) << "all banned alike: ties go to the lowest id";
}

TEST(SamplerMinTokens, StopTokensWaitForMinTokens) {
    const std::vector<float> logits = {0.0f, 1.0f, 5.0f, 0.5f};  // token 2 (a stop token) is the greedy choice
    SamplingParams params = greedy();
    params.min_tokens = 2;
    Sampler sampler(params, 4, /*stop_tokens=*/{2, 3});
    for (int step = 0; step < 2; ++step) {
        const int32_t token = sampler.sample(logits.data());
        EXPECT_EQ(token, 1) << "step " << step << ": stop tokens 2 and 3 are banned";
        sampler.accept(token);
    }
    EXPECT_EQ(sampler.sample(logits.data()), 2) << "min_tokens reached";

    Sampler without_min(greedy(), 4, {2, 3});
    EXPECT_EQ(without_min.sample(logits.data()), 2) << "min_tokens 0 bans nothing";
    SamplingParams no_stops = greedy();
    no_stops.min_tokens = 5;
    EXPECT_EQ(Sampler(no_stops, 4).sample(logits.data()), 2) << "no stop tokens: nothing to hold back";
}

TEST(SamplerMinTokens, PromptTokensDoNotCount) {
    const std::vector<float> logits = {0.0f, 1.0f, 5.0f};
    SamplingParams params = greedy();
    params.min_tokens = 1;
    Sampler sampler(params, 3, {2});
    sampler.accept_prompt({0, 1, 0, 1});
    EXPECT_EQ(sampler.sample(logits.data()), 1);
}

TEST(SamplingParamsFields, LogitBiasAndMinTokensRanges) {
    SamplingParams params;
    params.logit_bias = {{3, 100.0f}, {4, -100.0f}, {5, -kInf}};
    EXPECT_TRUE(params.validate().is_ok()) << params.validate().message();
    for (float bias : {100.5f, -101.0f, kInf, std::numeric_limits<float>::quiet_NaN()}) {
        params.logit_bias = {{3, bias}};
        const Status status = params.validate();
        EXPECT_FALSE(status.is_ok()) << bias;
        EXPECT_NE(status.message().find("logit_bias"), std::string::npos) << status.message();
    }
    params.logit_bias = {{-1, 1.0f}};
    EXPECT_FALSE(params.validate().is_ok());
    params.logit_bias.clear();
    params.min_tokens = -1;
    EXPECT_FALSE(params.validate().is_ok());
}

// A grammar's mask: only allowed tokens can come out, at any temperature, and a +100 bias does not revive a masked
// token (the mask is applied before biases and penalties).
TEST(SamplerAllowedMask, OnlyAllowedTokensComeOutWhateverTheBiasOrTemperature) {
    const std::vector<float> logits = random_logits(300, 9);
    const int32_t best = argmax(logits);
    std::vector<uint64_t> allowed((300 + 63) / 64, 0);
    const std::vector<int32_t> allowed_ids = {7, 150, 299};
    for (int32_t id : allowed_ids) allowed[id / 64] |= uint64_t{1} << (id % 64);
    ASSERT_EQ(std::count(allowed_ids.begin(), allowed_ids.end(), best), 0);

    SamplingParams params = greedy();
    params.logit_bias = {{best, 100.0f}};
    std::vector<float> only_allowed(300, -kInf);
    for (int32_t id : allowed_ids) only_allowed[static_cast<size_t>(id)] = logits[static_cast<size_t>(id)];
    EXPECT_EQ(Sampler(params, 300).sample(logits.data(), allowed.data()), argmax(only_allowed));

    params.temperature = 2.0f;
    Sampler sampler(params, 300);
    for (int i = 0; i < 500; ++i) {
        const int32_t token = sampler.sample(logits.data(), allowed.data());
        ASSERT_EQ(std::count(allowed_ids.begin(), allowed_ids.end(), token), 1) << token;
    }
}

}  // namespace
}  // namespace tern
