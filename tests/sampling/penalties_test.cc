// Penalties on small rows with hand-computed results.
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "sampling/sampler.h"

namespace tern {
namespace {

std::vector<float> penalized(const Sampler& sampler, std::vector<float> logits) {
    sampler.apply_penalties(logits.data());
    return logits;
}

TEST(PenaltiesTest, AllThreeFormulas) {
    SamplingParams params;
    params.repetition_penalty = 2.0f;
    params.presence_penalty = 0.5f;
    params.frequency_penalty = 0.25f;
    Sampler sampler(params, 5);
    sampler.accept_prompt({0, 1});
    sampler.accept(2);
    sampler.accept(2);
    sampler.accept(0);
    const std::vector<float> out = penalized(sampler, {2.0f, -1.0f, 0.5f, 3.0f, -4.0f});
    EXPECT_FLOAT_EQ(out[0], 2.0f / 2.0f - (0.5f + 0.25f * 1));   // prompt+output: divided, then 1 output use
    EXPECT_FLOAT_EQ(out[1], -1.0f * 2.0f);                      // prompt only, negative: multiplied
    EXPECT_FLOAT_EQ(out[2], 0.5f / 2.0f - (0.5f + 0.25f * 2));  // two output uses
    EXPECT_FLOAT_EQ(out[3], 3.0f);                              // never seen
    EXPECT_FLOAT_EQ(out[4], -4.0f);
    EXPECT_FLOAT_EQ(out[0], 0.25f);  // the same numbers written out, in case both sides shared a mistake
    EXPECT_FLOAT_EQ(out[2], -0.75f);
}

TEST(PenaltiesTest, RepetitionAppliesOncePerTokenHoweverOftenItOccurs) {
    SamplingParams params;
    params.repetition_penalty = 2.0f;
    Sampler sampler(params, 3);
    sampler.accept_prompt({1, 1, 1});
    sampler.accept(1);
    EXPECT_EQ(penalized(sampler, {4.0f, 4.0f, 4.0f}), (std::vector<float>{4.0f, 2.0f, 4.0f}));
}

TEST(PenaltiesTest, RepetitionWindowSlides) {
    SamplingParams params;
    params.repetition_penalty = 4.0f;
    params.penalty_last_n = 3;
    Sampler sampler(params, 6);
    sampler.accept_prompt({0, 1, 2, 3});  // the window holds 1, 2, 3
    const std::vector<float> ones(6, 1.0f);
    EXPECT_EQ(penalized(sampler, ones), (std::vector<float>{1.0f, 0.25f, 0.25f, 0.25f, 1.0f, 1.0f}));
    sampler.accept(4);  // 2, 3, 4
    EXPECT_EQ(penalized(sampler, ones), (std::vector<float>{1.0f, 1.0f, 0.25f, 0.25f, 0.25f, 1.0f}));
    sampler.accept(4);  // 3, 4, 4
    sampler.accept(3);  // 4, 4, 3
    EXPECT_EQ(penalized(sampler, ones), (std::vector<float>{1.0f, 1.0f, 1.0f, 0.25f, 0.25f, 1.0f}));
    sampler.accept(5);  // 4, 3, 5: one 4 left the window, another is still in it
    EXPECT_EQ(penalized(sampler, ones), (std::vector<float>{1.0f, 1.0f, 1.0f, 0.25f, 0.25f, 0.25f}));
    sampler.accept(0);  // 3, 5, 0
    sampler.accept(0);  // 5, 0, 0
    EXPECT_EQ(penalized(sampler, ones), (std::vector<float>{0.25f, 1.0f, 1.0f, 1.0f, 1.0f, 0.25f}));
}

TEST(PenaltiesTest, WholeHistoryAndOff) {
    std::vector<int32_t> prompt;
    for (int idx = 0; idx < 500; ++idx) prompt.push_back(idx % 7);

    SamplingParams whole;
    whole.repetition_penalty = 2.0f;
    whole.penalty_last_n = -1;
    Sampler whole_sampler(whole, 8);
    whole_sampler.accept_prompt(prompt);
    const std::vector<float> twos(8, 2.0f);
    std::vector<float> expected(8, 1.0f);
    expected[7] = 2.0f;
    EXPECT_EQ(penalized(whole_sampler, twos), expected);

    SamplingParams off = whole;
    off.penalty_last_n = 0;  // turns repetition off but not presence/frequency
    off.presence_penalty = 1.0f;
    Sampler off_sampler(off, 8);
    off_sampler.accept_prompt(prompt);
    off_sampler.accept(3);
    expected.assign(8, 2.0f);
    expected[3] = 1.0f;
    EXPECT_EQ(penalized(off_sampler, twos), expected);
}

TEST(PenaltiesTest, PresenceAndFrequencyIgnoreThePromptAndAnyWindow) {
    SamplingParams params;
    params.presence_penalty = 1.5f;
    params.frequency_penalty = -0.5f;  // negative values encourage repeats
    params.penalty_last_n = 1;
    Sampler sampler(params, 3);
    sampler.accept_prompt({0, 0, 1});
    EXPECT_EQ(penalized(sampler, {1.0f, 1.0f, 1.0f}), (std::vector<float>{1.0f, 1.0f, 1.0f}));
    for (int idx = 0; idx < 4; ++idx) sampler.accept(2);
    sampler.accept(1);
    // token 2: 1 - (1.5 + -0.5 * 4) = 1.5; token 1: 1 - (1.5 - 0.5) = 0
    EXPECT_EQ(penalized(sampler, {1.0f, 1.0f, 1.0f}), (std::vector<float>{1.0f, 0.0f, 1.5f}));
}

TEST(PenaltiesTest, SampleUsesPenalizedLogits) {
    SamplingParams params;
    params.temperature = 0.0f;
    params.repetition_penalty = 1.5f;
    Sampler sampler(params, 3);
    const std::vector<float> logits = {5.0f, 4.0f, -1.0f};
    EXPECT_EQ(sampler.sample(logits.data()), 0);
    sampler.accept(0);  // 5 / 1.5 = 3.33 < 4
    EXPECT_EQ(sampler.sample(logits.data()), 1);
    sampler.accept(1);  // 4 / 1.5 = 2.67 < 3.33
    EXPECT_EQ(sampler.sample(logits.data()), 0);

    // Non-greedy sampling sees the same penalties: a huge frequency penalty rules token 0 out.
    SamplingParams random;
    random.frequency_penalty = 2.0f;
    Sampler random_sampler(random, 3);
    for (int idx = 0; idx < 20; ++idx) random_sampler.accept(0);
    const std::vector<float> close = {1.0f, 0.5f, 0.5f};
    for (int idx = 0; idx < 500; ++idx) EXPECT_NE(random_sampler.sample(close.data()), 0);
}

TEST(PenaltiesTest, NoPenaltiesLeaveLogitsUntouched) {
    Sampler sampler(SamplingParams{}, 3);
    sampler.accept_prompt({0, 1, 2});
    sampler.accept(1);
    const float neg_inf = -std::numeric_limits<float>::infinity();
    EXPECT_EQ(penalized(sampler, {0.5f, -2.0f, neg_inf}), (std::vector<float>{0.5f, -2.0f, neg_inf}));
}

}  // namespace
}  // namespace tern
