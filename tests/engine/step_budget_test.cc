// The step budget sized from measured speed: the arithmetic (linear in the measured time, clamped, the cap on running
// sequences kept within the budget) and the measurement on a real engine (bounded by the context, leaves the engine
// idle, and a lowered budget is what later steps keep to).
#include "engine/step_budget.h"

#include <gtest/gtest.h>

#include "synthetic_model_suite.h"

namespace tern::engine {
namespace {

TEST(SizeStepBudget, ScalesTheMeasuredStepToTheTarget) {
    const StepBudgetOptions options{.target_step_ms = 250.0, .min_tokens = 32, .max_tokens = 2048, .max_running = 256};
    const StepBudget budget = size_step_budget({.num_tokens = 100, .ms = 200.0}, options);
    EXPECT_EQ(budget.max_batched_tokens, 125);
    EXPECT_EQ(budget.measured.num_tokens, 100);
    // 125 tokens a step cannot give 256 sequences a token each: the cap follows the budget.
    EXPECT_EQ(budget.max_running, 125);
    EXPECT_FALSE(budget.target_missed);
    EXPECT_EQ(size_step_budget({.num_tokens = 100, .ms = 50.0}, options).max_batched_tokens, 500);
}

TEST(SizeStepBudget, ClampsToTheBounds) {
    const StepBudgetOptions options{.target_step_ms = 250.0, .min_tokens = 32, .max_tokens = 2048, .max_running = 16};
    EXPECT_EQ(size_step_budget({.num_tokens = 32, .ms = 1.0}, options).max_batched_tokens, 2048);
    EXPECT_EQ(size_step_budget({.num_tokens = 32, .ms = 0.0}, options).max_batched_tokens, 2048);
    const StepBudget slow = size_step_budget({.num_tokens = 32, .ms = 5000.0}, options);
    EXPECT_EQ(slow.max_batched_tokens, 32);
    EXPECT_EQ(slow.max_running, 16);  // already within the budget
}

TEST(SizeStepBudget, AnExplicitCapOnRunningSequencesRaisesTheBudget) {
    StepBudgetOptions options{.target_step_ms = 250.0, .min_tokens = 32, .max_tokens = 2048, .max_running = 300,
                              .max_running_explicit = true};
    const StepBudget budget = size_step_budget({.num_tokens = 100, .ms = 200.0}, options);
    EXPECT_EQ(budget.max_batched_tokens, 300);
    EXPECT_EQ(budget.max_running, 300);
    EXPECT_TRUE(budget.target_missed);
    EXPECT_NE(describe(budget, options).find("raised to --max-running 300"), std::string::npos)
        << describe(budget, options);
}

class MeasureStepBudget : public testing::SyntheticModelSuite<5> {
protected:
    std::unique_ptr<Engine> make_engine(EngineConfig config = {.kv_cache_bytes = 16 << 20}) {
        auto engine = Engine::create(*model_, *pool_, config);
        EXPECT_TRUE(engine.is_ok()) << engine.status().message();
        return std::move(engine.value());
    }
};

TEST_F(MeasureStepBudget, AGenerousTargetGivesTheLargestBudget) {
    std::unique_ptr<Engine> engine = make_engine();
    auto budget = measure_step_budget(*engine, StepBudgetOptions{.target_step_ms = 1e6});
    ASSERT_TRUE(budget.is_ok()) << budget.status().message();
    // The engine's own budget (2048) caps it; the probe is one request, which the tiny model's 512-token context
    // holds to 511 tokens.
    EXPECT_EQ(budget.value().max_batched_tokens, 2048);
    EXPECT_EQ(budget.value().measured.num_tokens, 511);
    EXPECT_GT(budget.value().measured.ms, 0.0);
    EXPECT_FALSE(engine->has_unfinished_requests());
    EXPECT_EQ(engine->stats().kv_usage, 0.0);
    EXPECT_TRUE(engine->verify().is_ok());
}

TEST_F(MeasureStepBudget, AnImpossibleTargetGivesTheSmallestBudgetAndLaterStepsKeepToIt) {
    std::unique_ptr<Engine> engine = make_engine();
    auto budget = measure_step_budget(*engine, StepBudgetOptions{.target_step_ms = 1e-6, .min_tokens = 8});
    ASSERT_TRUE(budget.is_ok()) << budget.status().message();
    EXPECT_EQ(budget.value().max_batched_tokens, 8);
    EXPECT_EQ(budget.value().max_running, 8);
    EXPECT_EQ(budget.value().measured.num_tokens, 32);  // no second probe: the first already asks for the least
    ASSERT_TRUE(engine->set_step_limits(budget.value().max_batched_tokens, budget.value().max_running).is_ok());
    EXPECT_EQ(engine->config().max_batched_tokens, 8);
    // A budget is only ever lowered: requests were admitted by what a step of the first size may hold.
    EXPECT_FALSE(engine->set_step_limits(4096, 8).is_ok());

    EngineRequest request{.id = 1, .prompt = std::vector<int32_t>(50, 2), .max_tokens = 3};
    ASSERT_TRUE(engine->add_request(request).is_ok());
    int num_steps = 0;
    while (engine->has_unfinished_requests()) {
        ASSERT_TRUE(engine->step().is_ok());
        EXPECT_LE(engine->stats().last_step_tokens, 8);
        ++num_steps;
    }
    EXPECT_EQ(num_steps, 7 + 2);  // 50 prompt tokens in 7 chunks, then two decodes
}

// A probe is one waiting request: a queue limit below its size bounds the probe, not the budget.
TEST_F(MeasureStepBudget, TheQueueLimitBoundsTheProbe) {
    std::unique_ptr<Engine> engine = make_engine(EngineConfig{.kv_cache_bytes = 16 << 20, .max_queued_tokens = 20});
    auto budget = measure_step_budget(*engine, StepBudgetOptions{.target_step_ms = 1e6});
    ASSERT_TRUE(budget.is_ok()) << budget.status().message();
    EXPECT_EQ(budget.value().measured.num_tokens, 20);
    EXPECT_EQ(budget.value().max_batched_tokens, 2048);
}

}  // namespace
}  // namespace tern::engine
