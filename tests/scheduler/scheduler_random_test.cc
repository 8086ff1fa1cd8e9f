// Randomized add / abort / step / step-limit changes against the scheduler with a fake model (random next tokens)
// and random draft tokens (speculative decoding: a random number of them accepted). Every step checks the plan
// against the budget, the cap and the block tables, that each request keeps exactly the tokens it was given (also
// across preemptions), that the KV slots a step reads as computed hold the request's own tokens (a fake KV that
// records the token written to each slot: a rejected draft's slot, or a prefix-cache hit, must never pass for
// computed KV of other tokens), and the KV pool's invariants; the run drains and ends with no leaked block.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include "scheduler/scheduler.h"

namespace tern::scheduler {
namespace {

constexpr int kBlockSize = 4;
constexpr int kNumBlocks = 33;
constexpr TokenId kStopToken = 7;

class SchedulerSimulation {
public:
    SchedulerSimulation(uint32_t seed, bool enable_prefix_caching)
        : rng_(seed),
          kv_(kv::KvCacheConfig{.block_size = kBlockSize, .num_blocks = kNumBlocks,
                                .enable_prefix_caching = enable_prefix_caching}),
          scheduler_(SchedulerConfig{.max_batched_tokens = uniform(1, 24), .max_running = uniform(1, 6),
                                     .max_queued_requests = 8, .max_queued_tokens = 160, .max_model_len = 96},
                     kv_) {
        for (int prefix_idx = 0; prefix_idx < 3; ++prefix_idx) prefixes_.push_back(random_tokens(12));
        initial_budget_ = scheduler_.config().max_batched_tokens;
        allowed_running_ = scheduler_.config().max_running;
    }

    void op() {
        int choice = uniform(0, 9);
        if (choice < 4) {
            add();
        } else if (choice == 4 && !expected_.empty()) {
            abort(random_live_request());
        } else if (choice == 5 && uniform(0, 19) == 0) {
            change_step_limits();
        } else {
            step();
        }
    }

    // Steps until every request finished; fails if that takes implausibly long (no progress).
    void drain() {
        for (int step_idx = 0; step_idx < 20000 && scheduler_.has_unfinished_requests(); ++step_idx) step();
        EXPECT_FALSE(scheduler_.has_unfinished_requests()) << "the scheduler stopped making progress";
        EXPECT_TRUE(expected_.empty());
        EXPECT_EQ(kv_.num_requests(), 0);
        EXPECT_EQ(kv_.num_free_blocks(), kv_.pool().num_usable_blocks()) << "leaked blocks";
        EXPECT_EQ(scheduler_.kv_usage(), 0.0);
        EXPECT_EQ(scheduler_.num_queued_tokens(), 0);
        Status status = kv_.verify();
        EXPECT_TRUE(status.is_ok()) << status.message();
    }

    int64_t num_finished(FinishReason reason) const { return finished_.contains(reason) ? finished_.at(reason) : 0; }
    int64_t num_rejected() const { return num_rejected_; }
    int64_t preemptions() const { return scheduler_.num_preemptions(); }
    int64_t num_drafts_scheduled() const { return num_drafts_scheduled_; }

private:
    int uniform(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }
    std::vector<TokenId> random_tokens(int count) {
        std::vector<TokenId> tokens(count);
        for (TokenId& token : tokens) token = uniform(0, 7);
        return tokens;
    }
    RequestId random_live_request() {
        auto it = expected_.begin();
        std::advance(it, uniform(0, static_cast<int>(expected_.size()) - 1));
        return it->first;
    }

    void add() {
        RequestParams params{.id = next_id_++, .prompt = {}, .max_tokens = uniform(1, 40), .priority = uniform(0, 2),
                             .stop_tokens = {}};
        // A third of the prompts continue a finished request's whole text, as a chat's next turn does: prefix-cache
        // hits then reach blocks that held generated tokens (and, before them, drafts).
        const bool follow_up = !finished_texts_.empty() && uniform(0, 2) == 0;
        if (follow_up) {
            params.prompt = finished_texts_[static_cast<size_t>(uniform(0, std::ssize(finished_texts_) - 1))];
        } else {
            params.prompt = prefixes_[uniform(0, 2)];
            params.prompt.resize(uniform(0, 12));
        }
        std::vector<TokenId> tail = random_tokens(uniform(params.prompt.empty() ? 1 : 0, follow_up ? 4 : 60));
        if (params.prompt.size() + tail.size() > 80) params.prompt.resize(80 - tail.size());
        params.prompt.insert(params.prompt.end(), tail.begin(), tail.end());
        if (uniform(0, 3) == 0) params.stop_tokens = {kStopToken};
        std::vector<TokenId> prompt = params.prompt;
        Status status = scheduler_.add_request(std::move(params));
        if (status.is_ok()) {
            expected_[next_id_ - 1] = prompt;
        } else {
            EXPECT_TRUE(status.code() == StatusCode::kResourceExhausted || status.code() == StatusCode::kInvalidArgument)
                << status.message();
            ++num_rejected_;
        }
    }

    void abort(RequestId id) {
        EXPECT_TRUE(scheduler_.abort(id).is_ok());
        EXPECT_FALSE(kv_.has_request(id));
        expected_.erase(id);
        ++finished_[FinishReason::kAbort];
    }

    // As a server does after measuring its speed: a budget up to the first one, any cap on running sequences.
    void change_step_limits() {
        const int budget = uniform(1, initial_budget_);
        const int max_running = uniform(1, 6);
        ASSERT_TRUE(scheduler_.set_step_limits(budget, max_running).is_ok());
        EXPECT_FALSE(scheduler_.set_step_limits(initial_budget_ + 1, max_running).is_ok());
        EXPECT_EQ(scheduler_.config().max_batched_tokens, budget);
        // Those running above a lowered cap run on; none is admitted until they are fewer than the cap.
        allowed_running_ = std::max(max_running, scheduler_.num_running());
    }

    void check_plan(const StepPlan& plan) {
        const SchedulerConfig& config = scheduler_.config();
        int num_tokens = 0;
        std::set<RequestId> ids;
        for (const ScheduledRequest& entry : plan.requests) {
            EXPECT_TRUE(ids.insert(entry.id).second) << "request " << entry.id << " scheduled twice";
            const Request* request = scheduler_.find(entry.id);
            ASSERT_NE(request, nullptr);
            EXPECT_EQ(request->state, RequestState::kRunning);
            EXPECT_EQ(request->num_computed_tokens, entry.start);
            EXPECT_GT(entry.num_tokens, 0);
            EXPECT_LE(entry.start + entry.num_tokens - entry.num_draft_tokens, request->num_tokens());
            EXPECT_LE(entry.num_draft_tokens, static_cast<int>(request->draft_tokens.size()));
            EXPECT_GE(int64_t(kv_.block_ids(entry.id).size()) * kBlockSize, entry.start + entry.num_tokens);
            num_tokens += entry.num_tokens;
        }
        EXPECT_EQ(plan.num_tokens, num_tokens);
        EXPECT_LE(num_tokens, config.max_batched_tokens);
        EXPECT_LE(scheduler_.num_running(), allowed_running_);
        allowed_running_ = std::max(config.max_running, scheduler_.num_running());
        EXPECT_EQ(scheduler_.num_running(), kv_.num_requests());
        for (RequestId id : plan.preempted) {
            EXPECT_EQ(scheduler_.find(id)->state, RequestState::kWaiting);
            EXPECT_FALSE(kv_.has_request(id));
        }
        // Something always runs when anything is unfinished: nobody waits on memory nobody holds.
        if (scheduler_.has_unfinished_requests()) {
            EXPECT_FALSE(plan.requests.empty());
        }
    }

    // The fake KV: the token each slot was last written with, per block.
    TokenId& slot(RequestId id, int position) {
        const kv::BlockId block = kv_.block_ids(id)[static_cast<size_t>(position / kBlockSize)];
        std::vector<TokenId>& contents = kv_contents_[block];
        contents.resize(kBlockSize, -1);
        return contents[static_cast<size_t>(position % kBlockSize)];
    }

    // Before the step: the computed positions hold the request's tokens. Then the step writes its positions,
    // drafts included.
    void write_kv(const StepPlan& plan) {
        for (const ScheduledRequest& entry : plan.requests) {
            const Request& request = *scheduler_.find(entry.id);
            for (int position = 0; position < entry.start; ++position) {
                ASSERT_EQ(slot(entry.id, position), request.tokens[static_cast<size_t>(position)])
                    << "request " << entry.id << " reads stale KV at position " << position;
            }
            const int num_known = entry.num_tokens - entry.num_draft_tokens;
            if (entry.num_draft_tokens > 0) {
                ASSERT_EQ(entry.start + num_known, request.num_tokens()) << "drafts must follow every known token";
            }
            ASSERT_LE(entry.num_draft_tokens, static_cast<int>(request.draft_tokens.size()));
            for (int idx = 0; idx < entry.num_tokens; ++idx) {
                const int position = entry.start + idx;
                slot(entry.id, position) = idx < num_known ? request.tokens[static_cast<size_t>(position)]
                                                           : request.draft_tokens[static_cast<size_t>(idx - num_known)];
            }
        }
    }

    // What a verifier would return: a random number of the drafts accepted, then one more token.
    std::vector<TokenId> verified_tokens(const ScheduledRequest& entry) {
        const Request& request = *scheduler_.find(entry.id);
        const int num_accepted = uniform(0, entry.num_draft_tokens);
        std::vector<TokenId> tokens(request.draft_tokens.begin(), request.draft_tokens.begin() + num_accepted);
        tokens.push_back(uniform(0, 7));
        return tokens;
    }

    // Drafts for some decoding requests, as a proposer would set them after a step.
    void propose_drafts() {
        for (const auto& [id, tokens] : expected_) {
            const Request* request = scheduler_.find(id);
            if (request->state != RequestState::kRunning || uniform(0, 2) == 0) continue;
            const bool decoding = request->num_computed_tokens + 1 == request->num_tokens();  // restated, not is_decoding()
            const Status status = scheduler_.set_draft_tokens(id, random_tokens(uniform(1, 4)));
            EXPECT_EQ(status.is_ok(), decoding) << status.message();
            if (decoding) {
                EXPECT_LE(request->num_output_tokens() + static_cast<int>(request->draft_tokens.size()),
                          request->params.max_tokens - 1);
            }
        }
    }

    void step() {
        StepPlan plan = scheduler_.schedule();
        check_plan(plan);
        write_kv(plan);
        if (testing::Test::HasFatalFailure()) return;
        if (!expected_.empty() && uniform(0, 19) == 0) abort(random_live_request());  // between schedule and update
        SampledTokens sampled;
        for (const ScheduledRequest& entry : plan.requests) {
            if (scheduler_.find(entry.id) != nullptr) sampled[entry.id] = verified_tokens(entry);
            num_drafts_scheduled_ += entry.num_draft_tokens;
        }
        for (const RequestUpdate& update : scheduler_.update_from_step(plan, sampled)) {
            ASSERT_TRUE(expected_.contains(update.id));
            std::vector<TokenId>& tokens = expected_[update.id];
            tokens.insert(tokens.end(), update.tokens.begin(), update.tokens.end());
            if (update.finish_reason) {
                EXPECT_FALSE(kv_.has_request(update.id));
                ++finished_[*update.finish_reason];
                if (finished_texts_.size() < 64) finished_texts_.push_back(tokens);
                expected_.erase(update.id);
            }
        }
        for (const auto& [id, tokens] : expected_) {
            const Request* request = scheduler_.find(id);
            ASSERT_NE(request, nullptr);
            EXPECT_EQ(request->tokens, tokens) << "request " << id;
            // Drafts are spent by the step that schedules the request and dropped by a preemption; a request the
            // budget left out keeps them (its tokens did not change).
            const bool scheduled = std::ranges::find(plan.requests, id, &ScheduledRequest::id) != plan.requests.end();
            if (scheduled || request->state == RequestState::kWaiting) {
                EXPECT_TRUE(request->draft_tokens.empty()) << "request " << id << " kept spent drafts";
            }
        }
        Status status = kv_.verify();
        ASSERT_TRUE(status.is_ok()) << status.message();
        propose_drafts();
    }

    std::mt19937 rng_;
    kv::KvManager kv_;
    Scheduler scheduler_;
    std::vector<std::vector<TokenId>> prefixes_;
    std::map<RequestId, std::vector<TokenId>> expected_;  // live requests: prompt plus the tokens handed out
    std::map<FinishReason, int64_t> finished_;
    RequestId next_id_ = 1;
    int64_t num_rejected_ = 0;
    std::unordered_map<kv::BlockId, std::vector<TokenId>> kv_contents_;
    std::vector<std::vector<TokenId>> finished_texts_;  // prompt and output of finished requests
    int64_t num_drafts_scheduled_ = 0;
    int initial_budget_ = 0;
    int allowed_running_ = 0;  // the cap, or more while requests admitted under a higher cap run on
};

class SchedulerRandomTest : public testing::TestWithParam<bool> {};

TEST_P(SchedulerRandomTest, ThousandsOfOperationsKeepInvariantsAndLeakNothing) {
    int64_t preemptions = 0, rejected = 0, stopped = 0, aborted = 0, drafts = 0;
    for (uint32_t seed = 1; seed <= 8; ++seed) {
        SchedulerSimulation sim(seed, GetParam());
        for (int op_idx = 0; op_idx < 3000; ++op_idx) {
            sim.op();
            if (testing::Test::HasFatalFailure()) return;
        }
        sim.drain();
        preemptions += sim.preemptions();
        rejected += sim.num_rejected();
        stopped += sim.num_finished(FinishReason::kStop);
        aborted += sim.num_finished(FinishReason::kAbort);
        drafts += sim.num_drafts_scheduled();
    }
    // The workload must exercise the interesting paths, or the invariants above prove little.
    EXPECT_GT(preemptions, 0);
    EXPECT_GT(rejected, 0);
    EXPECT_GT(stopped, 0);
    EXPECT_GT(aborted, 0);
    EXPECT_GT(drafts, 0);
}

INSTANTIATE_TEST_SUITE_P(PrefixCaching, SchedulerRandomTest, testing::Bool());

}  // namespace
}  // namespace tern::scheduler
