// The engine's speculative drafts: prompt lookup (spec/ngram_proposer.h) or a draft model (spec/draft_model.h), and
// when a request stops drafting because its drafts do not pay. (engine_sample.cc verifies them.)
#include <algorithm>

#include "base/check.h"
#include "engine/engine.h"
#include "trace/trace.h"

namespace tern::engine {
namespace {

// A step that verifies 1 + 4 tokens costs 1.2-1.35 one-token steps at batch 1 (docs/perf/speculative.md: the small
// synthetic model, 2 threads), so prompt lookup, whose drafts cost nothing, breaks even at about 1.35 tokens a
// verifying step: 1.5 leaves a margin. A draft model adds K forwards of its own, each costing about its weights'
// share of the target's (decode reads the weights). A request below the threshold over kVerificationsJudged
// verifying steps pauses, then tries again (its text may start repeating later).
// Each failed judgement doubles the pause (from kPauseTokens up to kMaxPauseTokens): a draft model that seldom agrees
// with the target paid 15% of the plain speed at a fixed 32-token pause (docs/perf/speculative.md).
constexpr double kVerifyingStepCost = 1.5;
constexpr int kVerificationsJudged = 4;
constexpr int kPauseTokens = 32;
constexpr int kMaxPauseTokens = 1024;

}  // namespace

double Engine::min_tokens_per_verification(const SpeculativeConfig& config, const Model& target,
                                           const Model* draft) {
    if (config.min_tokens_per_verification > 0.0) return config.min_tokens_per_verification;
    if (draft == nullptr) return kVerifyingStepCost;
    const double cost_ratio = static_cast<double>(draft->stored_weight_bytes()) /
                              static_cast<double>(std::max<int64_t>(target.stored_weight_bytes(), 1));
    return kVerifyingStepCost + config.num_speculative_tokens * cost_ratio;
}

bool Engine::drafting_pays(RequestState& state, int num_output_tokens) {
    if (num_output_tokens < state.drafts_paused_until) return false;
    if (state.num_verifications < kVerificationsJudged) return true;
    const bool pays = state.num_verified_tokens >= min_tokens_per_verification_ * state.num_verifications;
    state.pause_tokens = pays ? 0 : std::clamp(2 * state.pause_tokens, kPauseTokens, kMaxPauseTokens);
    if (!pays) state.drafts_paused_until = num_output_tokens + state.pause_tokens;
    if (draft_) last_draft_model_pause_ = state.pause_tokens;
    state.num_verifications = 0;
    state.num_verified_tokens = 0;
    return pays;
}

// Whether a draft model pays depends on the model more than on the text (prompt lookup's, on the text alone), so a
// new request starts where the last judged one left off: paused as long as its last pause, which its own first
// judgement then doubles or ends. Without this each request paid its first judgements anew: 13% of the plain speed
// with a draft that agreed 2% of the time and 128-token requests (docs/perf/speculative.md).
void Engine::start_drafting_state(RequestState& state) const {
    if (!draft_) return;
    state.pause_tokens = last_draft_model_pause_;
    state.drafts_paused_until = last_draft_model_pause_;
}

// A draft model's drafts are placeholders here (the scheduler reserves their slots); fill_model_drafts() computes
// those the step has room for. A request whose draft KV lags by more than a step's budget catches up first.
void Engine::propose_drafts() {
    const SpeculativeConfig& config = config_.speculative;
    if (config.num_speculative_tokens == 0 || scheduler_->num_running() > config.disable_by_batch_size) return;
    spec::NgramOptions options = config.ngram;
    options.num_tokens = config.num_speculative_tokens;
    std::vector<RequestId> lagging;
    for (auto& [id, state] : requests_) {
        if (state.grammar || state.pooling) continue;
        const scheduler::Request* request = scheduler_->find(id);
        TERN_CHECK(request != nullptr) << "the scheduler lost request " << id;
        if (!request->is_decoding() || !drafting_pays(state, request->num_output_tokens())) continue;
        if (draft_ && request->num_tokens() - state.draft_kv_end > config_.max_batched_tokens) {
            lagging.push_back(id);
            continue;
        }
        std::vector<int32_t> drafts =
            draft_ ? std::vector<int32_t>(static_cast<size_t>(config.num_speculative_tokens), request->tokens.back())
                   : spec::propose_ngram(request->tokens, options);
        if (drafts.empty()) continue;
        const Status status = scheduler_->set_draft_tokens(id, std::move(drafts));
        TERN_CHECK(status.is_ok()) << status.message();
    }
    if (!lagging.empty()) {
        const Status status = catch_up_draft_kv(lagging);
        TERN_CHECK(status.is_ok()) << "the draft model failed: " << status.message();
    }
}

Status Engine::catch_up_draft_kv(const std::vector<RequestId>& ids) {
    trace::Span span("draft_catch_up", "engine");
    std::vector<spec::DraftSequence> sequences;
    for (RequestId id : ids) {
        const RequestState& state = requests_.at(id);
        const std::vector<int32_t>& tokens = scheduler_->find(id)->tokens;
        sequences.push_back({.block_table = kv_->block_ids(id, 0),
                             .tokens = std::span(tokens).subspan(static_cast<size_t>(state.draft_kv_end),
                                                                 static_cast<size_t>(config_.max_batched_tokens)),
                             .first_position = state.draft_kv_end});
    }
    TERN_RETURN_IF_ERROR(draft_->propose(sequences, pool_).status());
    for (RequestId id : ids) requests_.at(id).draft_kv_end += config_.max_batched_tokens;
    return Status::ok();
}

// Each drafting request's known tokens the draft cache lacks, the last one included, then its drafts: their slots
// lie in the blocks the scheduler allocated for the verification.
Status Engine::fill_model_drafts(const scheduler::StepPlan& plan) {
    std::vector<spec::DraftSequence> sequences;
    std::vector<RequestId> ids;
    for (const auto& scheduled : plan.requests) {
        if (scheduled.num_draft_tokens == 0) continue;
        const std::vector<int32_t>& tokens = scheduler_->find(scheduled.id)->tokens;
        const int first = requests_.at(scheduled.id).draft_kv_end;
        sequences.push_back({.block_table = kv_->block_ids(scheduled.id, 0),
                             .tokens = std::span(tokens).subspan(static_cast<size_t>(first)),
                             .first_position = first, .num_drafts = scheduled.num_draft_tokens});
        ids.push_back(scheduled.id);
    }
    if (sequences.empty()) return Status::ok();
    trace::Span span("draft", "engine");
    TERN_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> drafts, draft_->propose(sequences, pool_));
    for (size_t idx = 0; idx < ids.size(); ++idx) {
        TERN_RETURN_IF_ERROR(scheduler_->set_draft_tokens(ids[idx], std::move(drafts[idx])));
    }
    return Status::ok();
}

}  // namespace tern::engine
