// The engine's sampling: grammar masks, plain draws and the verification of speculative drafts. (engine.cc runs the
// step around them; engine_draft.cc proposes the drafts.)
#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "engine/engine.h"
#include "engine/logprobs.h"
#include "trace/trace.h"

namespace tern::engine {

// The tokens the request's grammar allows next, and the stop tokens where its text may end.
// A grammar that allows nothing more (its text is complete) leaves only the stop tokens (add_request makes sure
// there are some). A grammar the vocabulary cannot continue (a byte no token spells) leaves none: the stop tokens
// are allowed then, so that the request ends rather than leaves the grammar.
void Engine::fill_grammar_mask(RequestState& state) {
    state.grammar->fill_next_token_mask(state.allowed);
    if (state.grammar->can_end() || state.allowed.count() == 0) {
        for (int32_t token : state.stop_tokens) state.allowed.set(token);
    }
}

// The masks of every constrained request that samples in this step, side by side on the pool: each request's
// matcher is its own and the compiled grammar is only read.
void Engine::fill_grammar_masks(const scheduler::StepPlan& plan) {
    std::vector<RequestState*> constrained;
    for (const auto& scheduled : plan.requests) {
        if (!samples_this_step(scheduled)) continue;
        RequestState& state = requests_.at(scheduled.id);
        if (state.grammar) constrained.push_back(&state);
    }
    if (constrained.empty()) return;
    pool_.parallel_for_dynamic(static_cast<int64_t>(constrained.size()), [&](int64_t begin, int64_t end, int) {
        for (int64_t i = begin; i < end; ++i) fill_grammar_mask(*constrained[static_cast<size_t>(i)]);
    });
}

// Samples under the grammar's mask and advances the grammar. The budget is kept too: while the fewest bytes that
// complete the text, one token each, plus the end token fit in the tokens left, any allowed token may come; a token
// that would leave too few (a model that keeps opening strings and arrays, as a random one does) is taken back and
// the draw repeated among the tokens that walk a shortest completion, so that the text can end within max_tokens.
// A grammar that needs more parser work than a request may use (a hostile ambiguous one: GrammarMatcher::overloaded)
// ends its request with a stop token, and collect() reports why: it must not hold up the others.
bool Engine::advance_grammar(RequestState& state, int32_t token) {
    if (state.grammar->accept_token(token)) return true;
    TERN_CHECK(state.grammar->overloaded()) << "the grammar refused a token its mask allowed";
    return false;
}

int32_t Engine::sample_with_grammar(RequestState& state, const float* logits, int tokens_left) {
    grammar::GrammarMatcher& matcher = *state.grammar;
    const auto is_stop = [&](int32_t token) {
        return std::count(state.stop_tokens.begin(), state.stop_tokens.end(), token) > 0;
    };
    if (matcher.overloaded()) return state.stop_tokens.front();  // from its mask
    int32_t token = state.sampler.sample(logits, state.allowed.words().data());  // filled by fill_grammar_masks
    const int left_after = tokens_left - 1;
    if (is_stop(token)) return token;
    if (!advance_grammar(state, token)) return state.stop_tokens.front();
    if (matcher.distance_to_end() + 1 <= static_cast<uint32_t>(std::max(left_after, 0))) {
        return token;
    }
    matcher.rollback(1);
    matcher.fill_shortest_path_mask(state.allowed);
    if (matcher.can_end()) {
        for (int32_t stop : state.stop_tokens) state.allowed.set(stop);
    }
    if (state.allowed.count() > 0) token = state.sampler.sample(logits, state.allowed.words().data());
    if (!is_stop(token) && !advance_grammar(state, token)) return state.stop_tokens.front();
    return token;
}

scheduler::SampledTokens Engine::sample(const scheduler::StepPlan& plan, StepLogprobs& logprobs) {
    trace::Span span("sample", "engine");
    const int64_t vocab_size = model_.hparams().vocab_size;
    scheduler::SampledTokens sampled;
    fill_grammar_masks(plan);
    for (size_t idx = 0; idx < plan.requests.size(); ++idx) {
        const auto& scheduled = plan.requests[idx];
        if (!samples_this_step(scheduled)) continue;
        RequestState& state = requests_.at(scheduled.id);
        if (state.pooling) continue;  // an embedding: no logits, nothing to sample
        const float* logits = logits_.data() + (logit_rows_[idx].first + logit_rows_[idx].num_prompt) * vocab_size;
        std::vector<TokenLogprobs>* token_logprobs_out = state.num_top_logprobs >= 0 ? &logprobs[scheduled.id] : nullptr;
        if (scheduled.num_draft_tokens > 0) {
            sampled.emplace(scheduled.id, verify_drafts(state, scheduled, logits, token_logprobs_out));
            continue;
        }
        const scheduler::Request& request = *scheduler_->find(scheduled.id);
        const int32_t token = state.grammar ? sample_with_grammar(state, logits, request.params.max_tokens -
                                                                                     request.num_output_tokens())
                                            : state.sampler.sample(logits);
        state.sampler.accept(token);
        sampled.emplace(scheduled.id, std::vector<int32_t>{token});
        if (token_logprobs_out != nullptr) {
            token_logprobs_out->push_back(
                token_logprobs(logits, vocab_size, token, state.num_top_logprobs, state.sampler));
        }
    }
    return sampled;
}

// Row k predicts the token after draft k - 1 (row 0: after the last known token). Each row is checked only after
// the tokens before it were accepted into the sampler, so penalties and min_tokens see what they would without
// drafts; the first rejection ends the chain with the token drawn in its place, and when every draft is accepted
// the last row gives one more token.
std::vector<int32_t> Engine::verify_drafts(RequestState& state, const scheduler::ScheduledRequest& scheduled,
                                           const float* rows, std::vector<TokenLogprobs>* logprobs) {
    const int64_t vocab_size = model_.hparams().vocab_size;
    const std::vector<int32_t>& drafts = scheduler_->find(scheduled.id)->draft_tokens;
    std::vector<int32_t> tokens;
    bool all_accepted = true;
    for (int idx = 0; idx <= scheduled.num_draft_tokens && all_accepted; ++idx) {
        const float* logits = rows + idx * vocab_size;
        int32_t token = 0;
        if (idx < scheduled.num_draft_tokens) {
            const Sampler::DraftCheck check = state.sampler.check_draft(logits, drafts[static_cast<size_t>(idx)]);
            token = check.token;
            all_accepted = check.accepted;
            counters_.num_accepted_draft_tokens += check.accepted ? 1 : 0;
        } else {
            token = state.sampler.sample(logits);
        }
        state.sampler.accept(token);
        tokens.push_back(token);
        if (logprobs != nullptr) {
            logprobs->push_back(token_logprobs(logits, vocab_size, token, state.num_top_logprobs, state.sampler));
        }
    }
    ++counters_.num_drafts;
    counters_.num_draft_tokens += scheduled.num_draft_tokens;
    // The draft model wrote its KV at the last known token's position and the drafts' but the last: the accepted
    // ones hold (spec/draft_model.h).
    if (draft_) {
        state.draft_kv_end = scheduled.start + std::min(static_cast<int>(tokens.size()), scheduled.num_draft_tokens);
    }
    ++state.num_verifications;
    state.num_verified_tokens += static_cast<int>(tokens.size());
    return tokens;
}

}  // namespace tern::engine
