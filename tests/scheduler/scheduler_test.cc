// Exact plans of the scheduler on small pools: budget splitting and chunked prefill, running requests first,
// priority order, preemption by recompute and resumption through the prefix cache, admission rejections, abort.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduler/scheduler.h"

namespace tern::scheduler {
namespace {

using Ids = std::vector<kv::BlockId>;
using Plan = std::vector<ScheduledRequest>;

std::vector<TokenId> tokens_from(TokenId first, int count) {
    std::vector<TokenId> tokens(count);
    std::iota(tokens.begin(), tokens.end(), first);
    return tokens;
}

RequestParams make_request(RequestId id, int prompt_len, int max_tokens, int priority = 0) {
    return {.id = id, .prompt = tokens_from(static_cast<TokenId>(id * 1000), prompt_len), .max_tokens = max_tokens,
            .priority = priority, .stop_tokens = {}};
}

// A scheduler over a pool of `num_blocks` blocks of 4 tokens (one is the null block).
struct Harness {
    explicit Harness(SchedulerConfig config, int num_blocks = 64)
        : kv(kv::KvCacheConfig{.block_size = 4, .num_blocks = num_blocks, .enable_prefix_caching = true}),
          scheduler(config, kv) {}

    // Runs the plan with every request sampling `token`, and returns the updates.
    std::vector<RequestUpdate> run(const StepPlan& plan, TokenId token = 7) {
        SampledTokens sampled;
        for (const ScheduledRequest& entry : plan.requests) sampled[entry.id] = {token};
        std::vector<RequestUpdate> updates = scheduler.update_from_step(plan, sampled);
        Status status = kv.verify();
        EXPECT_TRUE(status.is_ok()) << status.message();
        return updates;
    }
    Ids table(RequestId id) const {
        std::span<const kv::BlockId> ids = kv.block_ids(id);
        return {ids.begin(), ids.end()};
    }

    kv::KvManager kv;
    Scheduler scheduler;
};

SchedulerConfig config_with_budget(int max_batched_tokens) {
    return {.max_batched_tokens = max_batched_tokens, .max_running = 8, .max_queued_requests = 16,
            .max_queued_tokens = 1000, .max_model_len = 256};
}

TEST(Scheduler, ChunksPromptsInSevenTokenBudgetAndRunsDecodesFirst) {
    Harness h(config_with_budget(7));
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 20, 2)).is_ok());
    ASSERT_TRUE(h.scheduler.add_request(make_request(2, 10, 1)).is_ok());

    StepPlan plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 0, 7}}));
    EXPECT_EQ(plan.num_tokens, 7);
    EXPECT_EQ(h.scheduler.num_running(), 1);
    EXPECT_EQ(h.scheduler.num_waiting(), 1);
    std::vector<RequestUpdate> updates = h.run(plan);
    ASSERT_EQ(updates.size(), 1u);
    EXPECT_TRUE(updates[0].tokens.empty());  // a prompt chunk samples nothing

    plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 7, 7}}));
    h.run(plan);
    // The prompt's last chunk leaves one token of budget: request 2's first chunk.
    plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 14, 6}, {2, 0, 1}}));
    updates = h.run(plan, 42);
    ASSERT_EQ(updates.size(), 2u);
    EXPECT_EQ(updates[0].tokens, std::vector<TokenId>{42});
    EXPECT_TRUE(updates[1].tokens.empty());

    // Request 1 now decodes, and a decode comes before the rest of request 2's prompt.
    plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 20, 1}, {2, 1, 6}}));
    updates = h.run(plan);
    EXPECT_EQ(updates[0].finish_reason, std::optional(FinishReason::kLength));  // its second token
    EXPECT_EQ(h.scheduler.find(1), nullptr);
    EXPECT_EQ(h.kv.has_request(1), false);

    plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{2, 7, 3}}));
    updates = h.run(plan);
    EXPECT_EQ(updates[0].finish_reason, std::optional(FinishReason::kLength));
    EXPECT_FALSE(h.scheduler.has_unfinished_requests());
    EXPECT_EQ(h.kv.num_free_blocks(), h.kv.pool().num_usable_blocks());
}

TEST(Scheduler, DecodesTakeTheBudgetBeforeWaitingPrompts) {
    Harness h(config_with_budget(8));
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 3, 10)).is_ok());
    ASSERT_TRUE(h.scheduler.add_request(make_request(2, 4, 10)).is_ok());
    h.run(h.scheduler.schedule());  // both prompts in one step: 7 tokens
    ASSERT_TRUE(h.scheduler.add_request(make_request(3, 30, 10)).is_ok());
    StepPlan plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 3, 1}, {2, 4, 1}, {3, 0, 6}}));
    EXPECT_EQ(plan.num_tokens, 8);
}

TEST(Scheduler, ServesPriorityClassesInArrivalOrder) {
    SchedulerConfig config = config_with_budget(100);
    config.max_running = 2;
    Harness h(config);
    int priorities[] = {1, 0, 1, 0, 2};
    for (RequestId id = 1; id <= 5; ++id) {
        ASSERT_TRUE(h.scheduler.add_request(make_request(id, 3, 1, priorities[id - 1])).is_ok());
    }
    StepPlan plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{2, 0, 3}, {4, 0, 3}}));  // the cap of 2 running sequences
    h.run(plan);                                             // max_tokens 1: both finish
    plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 0, 3}, {3, 0, 3}}));
    h.run(plan);
    EXPECT_EQ(h.scheduler.schedule().requests, (Plan{{5, 0, 3}}));
}

TEST(Scheduler, PreemptsTheLeastImportantAndResumesFromThePrefixCache) {
    Harness h(config_with_budget(64), 7);  // 6 usable blocks: 24 slots
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 8, 8, 0)).is_ok());
    ASSERT_TRUE(h.scheduler.add_request(make_request(2, 8, 8, 1)).is_ok());
    StepPlan plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 0, 8}, {2, 0, 8}}));
    EXPECT_EQ(h.table(1), (Ids{1, 2}));
    EXPECT_EQ(h.table(2), (Ids{3, 4}));
    h.run(plan, 100);
    for (int step = 0; step < 4; ++step) h.run(h.scheduler.schedule(), 101 + step);  // slots 8..11 of each
    EXPECT_EQ(h.table(2), (Ids{3, 4, 6}));
    EXPECT_EQ(h.kv.num_free_blocks(), 0);

    // Request 1 needs a fourth block: request 2 (priority 1) is preempted, its blocks freed tail first, and
    // request 1 takes the head of the free queue (request 2's last block).
    plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 12, 1}}));
    EXPECT_EQ(plan.preempted, (std::vector<RequestId>{2}));
    EXPECT_EQ(h.scheduler.num_preemptions(), 1);
    EXPECT_EQ(h.table(1), (Ids{1, 2, 5, 6}));
    const Request* preempted = h.scheduler.find(2);
    ASSERT_NE(preempted, nullptr);
    EXPECT_EQ(preempted->state, RequestState::kWaiting);
    EXPECT_EQ(preempted->num_computed_tokens, 0);
    std::vector<TokenId> expected = tokens_from(2000, 8);
    for (TokenId token : {100, 101, 102, 103, 104}) expected.push_back(token);
    EXPECT_EQ(preempted->tokens, expected);  // the generated tokens are kept for the recompute
    EXPECT_EQ(h.scheduler.num_queued_tokens(), 13);
    h.run(plan, 105);

    // Request 2 cannot come back while request 1 holds the memory, and cannot preempt it (lower priority).
    plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 13, 1}}));
    h.run(plan, 106);
    std::vector<RequestUpdate> updates = h.run(h.scheduler.schedule(), 107);
    EXPECT_EQ(updates[0].finish_reason, std::optional(FinishReason::kLength));

    // Resumed: its first two blocks (the prompt) come from the prefix cache, only 5 tokens are recomputed.
    int64_t hits_before = h.kv.prefix_cache_stats().num_hit_tokens;
    plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{2, 8, 5}}));
    EXPECT_EQ(h.kv.prefix_cache_stats().num_hit_tokens - hits_before, 8);
    EXPECT_EQ(h.table(2), (Ids{3, 4, 5, 6}));
    h.run(plan, 200);
    for (int step = 0; step < 2; ++step) h.run(h.scheduler.schedule(), 201 + step);
    EXPECT_FALSE(h.scheduler.has_unfinished_requests());
    EXPECT_EQ(h.kv.num_free_blocks(), 6);
}

TEST(Scheduler, MoreImportantArrivalPreemptsWhenMemoryIsShort) {
    Harness h(config_with_budget(64), 5);  // 4 usable blocks
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 12, 4, 1)).is_ok());
    h.run(h.scheduler.schedule());
    ASSERT_TRUE(h.scheduler.add_request(make_request(2, 8, 4, 0)).is_ok());
    StepPlan plan = h.scheduler.schedule();
    // Request 1's decode was planned first, then given back when request 2 took its memory.
    EXPECT_EQ(plan.requests, (Plan{{2, 0, 8}}));
    EXPECT_EQ(plan.preempted, (std::vector<RequestId>{1}));
    EXPECT_EQ(plan.num_tokens, 8);
    EXPECT_EQ(h.scheduler.find(1)->state, RequestState::kWaiting);
}

TEST(Scheduler, StopTokenFinishesWithStop) {
    Harness h(config_with_budget(64));
    RequestParams params = make_request(1, 5, 10);
    params.stop_tokens = {2};
    ASSERT_TRUE(h.scheduler.add_request(params).is_ok());
    EXPECT_FALSE(h.run(h.scheduler.schedule(), 3)[0].finish_reason.has_value());
    std::vector<RequestUpdate> updates = h.run(h.scheduler.schedule(), 2);
    EXPECT_EQ(updates[0].tokens, std::vector<TokenId>{2});
    EXPECT_EQ(updates[0].finish_reason, std::optional(FinishReason::kStop));
    EXPECT_EQ(finish_reason_name(FinishReason::kStop), "stop");
    EXPECT_EQ(h.kv.num_requests(), 0);
}

TEST(Scheduler, RejectsWhenTheWaitingQueueIsFull) {
    SchedulerConfig config = config_with_budget(64);
    config.max_queued_requests = 2;
    config.max_queued_tokens = 20;
    Harness h(config);
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 12, 1)).is_ok());
    Status status = h.scheduler.add_request(make_request(2, 9, 1));
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(status.message().find("max queued tokens"), std::string::npos) << status.message();
    ASSERT_TRUE(h.scheduler.add_request(make_request(3, 8, 1)).is_ok());
    status = h.scheduler.add_request(make_request(4, 1, 1));
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(status.message().find("max queued requests"), std::string::npos) << status.message();
    EXPECT_EQ(h.scheduler.num_queued_tokens(), 20);
    h.run(h.scheduler.schedule());  // admitting them empties the queue
    EXPECT_EQ(h.scheduler.num_queued_tokens(), 0);
    EXPECT_TRUE(h.scheduler.add_request(make_request(4, 20, 1)).is_ok());
}

TEST(Scheduler, RejectsRequestsThatCanNeverFit) {
    SchedulerConfig config = config_with_budget(64);
    config.max_model_len = 32;
    Harness h(config, 7);  // 24 slots
    Status status = h.scheduler.add_request(make_request(1, 30, 3));
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("context length of 32"), std::string::npos) << status.message();
    status = h.scheduler.add_request(make_request(2, 20, 6));  // 25 slots: 7 blocks
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("whole pool has 6"), std::string::npos) << status.message();
    EXPECT_TRUE(h.scheduler.add_request(make_request(3, 20, 5)).is_ok());  // 24 slots: the last token needs none
    EXPECT_EQ(h.scheduler.add_request(make_request(3, 2, 1)).code(), StatusCode::kInvalidArgument);  // same id
    EXPECT_EQ(h.scheduler.add_request(make_request(4, 0, 1)).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(h.scheduler.add_request(make_request(5, 2, 0)).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(h.scheduler.num_waiting(), 1);
}

TEST(Scheduler, AbortFreesBlocksAtOnce) {
    Harness h(config_with_budget(64), 9);
    ASSERT_TRUE(h.scheduler.add_request(make_request(1, 10, 5)).is_ok());
    ASSERT_TRUE(h.scheduler.add_request(make_request(2, 10, 5)).is_ok());
    h.run(h.scheduler.schedule());
    ASSERT_TRUE(h.scheduler.add_request(make_request(3, 4, 5)).is_ok());
    EXPECT_EQ(h.kv.num_free_blocks(), 2);
    EXPECT_GT(h.scheduler.kv_usage(), 0.7);
    StepPlan plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 10, 1}, {2, 10, 1}, {3, 0, 4}}));
    EXPECT_TRUE(h.scheduler.abort(1).is_ok());  // between schedule() and update: its entry is skipped
    EXPECT_EQ(h.kv.num_free_blocks(), 4);
    EXPECT_EQ(h.run(plan).size(), 2u);
    EXPECT_TRUE(h.scheduler.abort(2).is_ok());
    EXPECT_TRUE(h.scheduler.abort(3).is_ok());
    EXPECT_EQ(h.scheduler.abort(3).code(), StatusCode::kNotFound);
    EXPECT_EQ(h.kv.num_free_blocks(), 8);
    EXPECT_EQ(h.scheduler.kv_usage(), 0.0);
    EXPECT_EQ(h.scheduler.num_running(), 0);
    ASSERT_TRUE(h.scheduler.add_request(make_request(4, 4, 5)).is_ok());
    EXPECT_TRUE(h.scheduler.abort(4).is_ok());  // a waiting request
    EXPECT_EQ(h.scheduler.num_waiting(), 0);
    EXPECT_EQ(h.scheduler.num_queued_tokens(), 0);
}

// A running request planned for a step and then preempted in the same schedule() by a more important arrival: the
// blocks it was given for that step are never computed, so none may stay in the prefix cache. (They did: the victim,
// or any request sharing its prefix, then resumed on KV that was never written.)
TEST(Scheduler, BlocksOfAStepThatNeverRanAreNotCached) {
    Harness h(config_with_budget(16), /*num_blocks=*/9);  // 8 usable blocks of 4 tokens
    const RequestParams victim = make_request(1, 29, 1, /*priority=*/2);
    ASSERT_TRUE(h.scheduler.add_request(victim).is_ok());
    StepPlan first = h.scheduler.schedule();
    ASSERT_EQ(first.requests, (Plan{{1, 0, 16}}));
    h.run(first);
    EXPECT_EQ(h.kv.get_computed_blocks(victim.prompt).num_tokens, 16);

    // Step 2 plans the victim's next 13 tokens (4 new blocks, 3 of them full: the pool is full), then the arrival
    // takes memory from it.
    ASSERT_TRUE(h.scheduler.add_request(make_request(2, 8, 1, /*priority=*/0)).is_ok());
    StepPlan second = h.scheduler.schedule();
    ASSERT_EQ(second.preempted, (std::vector<RequestId>{1}));
    ASSERT_EQ(second.requests, (Plan{{2, 0, 3}}));
    EXPECT_EQ(h.kv.get_computed_blocks(victim.prompt).num_tokens, 16) << "only the blocks step 1 computed";
    h.run(second);
    EXPECT_EQ(h.kv.get_computed_blocks(victim.prompt).num_tokens, 16);
}

// Speculative decoding's bookkeeping: drafts are scheduled after the known tokens, the accepted ones become tokens
// with computed KV, the rejected ones' positions are computed again, and nothing after a stop token is kept.
TEST(Scheduler, DraftTokensAreVerifiedInTheNextStep) {
    Harness h(config_with_budget(64));
    RequestParams params = make_request(1, 6, 10);
    params.stop_tokens = {99};
    ASSERT_TRUE(h.scheduler.add_request(params).is_ok());
    EXPECT_EQ(h.scheduler.set_draft_tokens(1, {5}).code(), StatusCode::kInvalidArgument);  // waiting
    h.run(h.scheduler.schedule(), 40);  // the prompt, and token 40
    ASSERT_TRUE(h.scheduler.set_draft_tokens(1, {41, 42, 43}).is_ok());

    StepPlan plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 6, 4, 3}}));  // token 40 and the three drafts
    SampledTokens sampled{{1, {41, 42, 50}}};        // two accepted, then the verifier's own token
    std::vector<RequestUpdate> updates = h.scheduler.update_from_step(plan, sampled);
    ASSERT_EQ(updates.size(), 1u);
    EXPECT_EQ(updates[0].tokens, (std::vector<TokenId>{41, 42, 50}));
    const Request& request = *h.scheduler.find(1);
    EXPECT_EQ(request.num_tokens(), 10);
    EXPECT_EQ(request.num_computed_tokens, 9);  // 43's slot is not computed: 50 goes there next
    EXPECT_TRUE(request.draft_tokens.empty());
    plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 9, 1, 0}}));
    h.run(plan, 60);

    // 10 tokens may be generated and 5 are out: at most 4 drafts, so that a step's tokens never pass max_tokens.
    ASSERT_TRUE(h.scheduler.set_draft_tokens(1, {1, 2, 3, 4, 5, 6}).is_ok());
    EXPECT_EQ(h.scheduler.find(1)->draft_tokens.size(), 4u);
    plan = h.scheduler.schedule();
    EXPECT_EQ(plan.requests, (Plan{{1, 10, 5, 4}}));
    // A stop token among the accepted drafts ends the request there.
    updates = h.scheduler.update_from_step(plan, SampledTokens{{1, {1, 99, 3}}});
    EXPECT_EQ(updates[0].tokens, (std::vector<TokenId>{1, 99}));
    EXPECT_EQ(updates[0].finish_reason, std::optional(FinishReason::kStop));
    EXPECT_EQ(h.kv.num_requests(), 0);
    EXPECT_TRUE(h.kv.verify().is_ok());
}

}  // namespace
}  // namespace tern::scheduler
