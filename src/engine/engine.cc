#include "engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "base/log.h"
#include "engine/logprobs.h"
#include "engine/step_trace.h"
#include "trace/trace.h"

namespace tern::engine {

Result<std::unique_ptr<Engine>> Engine::create(Model& model, ThreadPool& pool, const EngineConfig& config,
                                               Model* draft_model) {
    const bool wants_draft_model = config.speculative.num_speculative_tokens > 0 &&
                                   config.speculative.method == DraftMethod::kDraftModel;
    if (wants_draft_model != (draft_model != nullptr)) {
        return invalid_argument(draft_model ? "a draft model was given but speculative decoding with a draft model "
                                              "is not configured (--num-speculative-tokens)"
                                            : "speculative decoding with a draft model needs one (--draft-model)");
    }
    const HParams* draft_hparams = draft_model ? &draft_model->hparams() : nullptr;
    TERN_ASSIGN_OR_RETURN(EngineCapacity capacity, plan_capacity(model.hparams(), config, draft_hparams));
    std::unique_ptr<Engine> engine(new Engine(model, pool, config, capacity));
    TERN_ASSIGN_OR_RETURN(engine->cache_, KvCache::create_paged(model.hparams(), capacity.num_blocks + 1,
                                                                config.block_size, config.kv_type,
                                                                capacity.layers_per_block));
    if (draft_model != nullptr) {
        TERN_ASSIGN_OR_RETURN(engine->draft_,
                              spec::DraftModel::create(*draft_model, model.hparams().vocab_size,
                                                       capacity.num_blocks + 1, config.block_size, config.kv_type));
    }
    engine->min_tokens_per_verification_ = min_tokens_per_verification(config.speculative, model, draft_model);
    return engine;
}

Engine::Engine(Model& model, ThreadPool& pool, const EngineConfig& config, const EngineCapacity& capacity)
    : model_(model), pool_(pool), config_(config), capacity_(capacity) {
    kv_ = std::make_unique<kv::KvManager>(kv::KvCacheConfig{.block_size = config.block_size,
                                                            .num_blocks = static_cast<int>(capacity.num_blocks + 1),
                                                            .enable_prefix_caching = config.enable_prefix_caching,
                                                            .group_windows = capacity.group_windows});
    scheduler::SchedulerConfig scheduler_config{.max_batched_tokens = config.max_batched_tokens,
                                                .max_running = config.max_running,
                                                .max_queued_requests = config.max_queued_requests,
                                                .max_queued_tokens = config.max_queued_tokens,
                                                .max_model_len = static_cast<int>(capacity.max_model_len)};
    scheduler_ = std::make_unique<scheduler::Scheduler>(scheduler_config, *kv_);
    counters_.kv_token_capacity = capacity.kv_tokens;
}

Status Engine::add_request(EngineRequest request) {
    const int64_t vocab_size = model_.hparams().vocab_size;
    const auto out_of_vocab = [&](int32_t token) { return token < 0 || token >= vocab_size; };
    if (std::any_of(request.prompt.begin(), request.prompt.end(), out_of_vocab)) {
        return invalid_argument(fmt::format("request {}: a prompt token id is outside the vocabulary [0, {})",
                                            request.id, vocab_size));
    }
    if (std::any_of(request.stop_tokens.begin(), request.stop_tokens.end(), out_of_vocab)) {
        return invalid_argument(fmt::format("request {}: a stop token id is outside the vocabulary", request.id));
    }
    const auto& biases = request.sampling.logit_bias;
    if (std::any_of(biases.begin(), biases.end(), [&](const auto& bias) { return out_of_vocab(bias.first); })) {
        return invalid_argument(fmt::format("request {}: a logit_bias token id is outside the vocabulary [0, {})",
                                            request.id, vocab_size));
    }
    TERN_RETURN_IF_ERROR(request.sampling.validate());
    if (request.grammar && request.stop_tokens.empty()) {
        return invalid_argument(fmt::format("request {}: a request with a grammar needs a stop token (EOS) to end where "
                                            "the grammar's text ends: do not combine it with ignore_eos", request.id));
    }
    if (request.grammar && static_cast<int64_t>(request.grammar->vocabulary().size()) != vocab_size) {
        return invalid_argument(fmt::format("request {}: its grammar was compiled for a vocabulary of {} tokens, the "
                                            "model has {}", request.id, request.grammar->vocabulary().size(), vocab_size));
    }
    if (request.priority != 0 && config_.scheduling_policy == SchedulingPolicy::kFcfs) {
        return invalid_argument(fmt::format("request {}: priority {} needs the priority scheduling policy "
                                            "(--scheduling-policy priority); under fcfs every request has priority 0",
                                            request.id, request.priority));
    }
    const int num_prompt_tokens = static_cast<int>(request.prompt.size());
    scheduler::RequestParams params{.id = request.id, .prompt = request.prompt, .max_tokens = request.max_tokens,
                                    .priority = request.priority, .stop_tokens = request.stop_tokens,
                                    .prompt_only = request.embedding.has_value(),
                                    .use_cached_prefix = !request.embedding && request.num_prompt_logprobs < 0,
                                    .cache_salt = request.cache_salt};
    TERN_RETURN_IF_ERROR(scheduler_->add_request(std::move(params)));
    // The sampler bans the stop tokens until sampling.min_tokens tokens are out (vLLM's min_tokens).
    RequestState state{Sampler(request.sampling, static_cast<int32_t>(vocab_size), request.stop_tokens),
                       RequestTimings{}, request.num_top_logprobs};
    state.sampler.accept_prompt(request.prompt);
    state.pooling = request.embedding;
    if (request.grammar) {
        state.grammar.emplace(request.grammar);
        state.stop_tokens = request.stop_tokens;
    }
    state.num_prompt_logprobs = request.num_prompt_logprobs;
    state.timings.arrival = request.arrival == Clock::time_point{} ? Clock::now() : request.arrival;
    state.timings.num_prompt_tokens = num_prompt_tokens;
    start_drafting_state(state);
    requests_.insert_or_assign(request.id, std::move(state));
    counters_.num_prompt_tokens += num_prompt_tokens;
    return Status::ok();
}

Status Engine::abort(RequestId id) {
    TERN_RETURN_IF_ERROR(scheduler_->abort(id));
    auto found = requests_.find(id);
    TERN_CHECK(found != requests_.end()) << "engine lost track of request " << id;
    found->second.timings.finish = Clock::now();
    trace_request_life(id, found->second.timings);
    pending_outputs_.push_back(RequestOutput{.id = id, .finish_reason = FinishReason::kAbort,
                                             .timings = std::move(found->second.timings)});
    requests_.erase(found);
    return Status::ok();
}

Status Engine::set_step_limits(int max_batched_tokens, int max_running) {
    TERN_RETURN_IF_ERROR(scheduler_->set_step_limits(max_batched_tokens, max_running));
    config_.max_batched_tokens = max_batched_tokens;
    config_.max_running = max_running;
    return Status::ok();
}

Result<std::vector<RequestOutput>> Engine::step() {
    trace::Span step_span("step", "engine");
    std::vector<RequestOutput> outputs = std::move(pending_outputs_);
    pending_outputs_.clear();
    TERN_ASSIGN_OR_RETURN(const scheduler::StepPlan plan, schedule());
    if (plan.requests.empty()) return outputs;
    step_span.arg("requests", static_cast<int64_t>(plan.requests.size())).arg("tokens", plan.num_tokens);
    note_scheduled(plan, Clock::now());
    build_batch(plan);
    TERN_RETURN_IF_ERROR(forward(plan));
    StepLogprobs logprobs;
    const scheduler::SampledTokens sampled = sample(plan, logprobs);
    trace::Span update_span("update", "engine");
    const auto updates = scheduler_->update_from_step(plan, sampled);
    collect(updates, logprobs, outputs);
    count_step(plan);
    propose_drafts();
    return outputs;
}

Result<scheduler::StepPlan> Engine::schedule() {
    trace::Span span("schedule", "engine");
    scheduler::StepPlan plan = scheduler_->schedule();
    if (draft_) TERN_RETURN_IF_ERROR(fill_model_drafts(plan));
    counters_.num_preemptions += static_cast<int64_t>(plan.preempted.size());
    for (RequestId id : plan.preempted) {
        RequestState& state = requests_.at(id);
        ++state.timings.num_preemptions;
        state.draft_kv_end = 0;       // the blocks are gone
        state.embedding_sum.clear();  // recomputed from the first token
        state.num_embedded_tokens = 0;
        if (gathers_prompt_logprobs(state)) state.prompt_logprobs.clear();
    }
    return plan;
}

// The batched forward pass, then what its rows hold for embedding and prompt-logprob requests.
Status Engine::forward(const scheduler::StepPlan& plan) {
    const Clock::time_point begin = Clock::now();
    {
        trace::Span span("forward", "engine");
        TERN_RETURN_IF_ERROR(model_.forward(batch_, cache_.get(), &pool_, &logits_, &hidden_));
    }
    trace_prefill_chunks(plan, *scheduler_, begin, Clock::now());
    take_hidden_states(plan);
    take_prompt_logprobs(plan);
    return Status::ok();
}

void Engine::count_step(const scheduler::StepPlan& plan) {
    ++counters_.num_steps;
    counters_.last_step_tokens = plan.num_tokens;
    counters_.num_computed_tokens += plan.num_tokens;
    counters_.kv_live_tokens = 0;
    for (const auto& scheduled : plan.requests) {
        if (const scheduler::Request* request = scheduler_->find(scheduled.id)) {
            counters_.kv_live_tokens += request->num_computed_tokens;
        }
    }
}

void Engine::note_scheduled(const scheduler::StepPlan& plan, Clock::time_point now) {
    for (const auto& scheduled : plan.requests) {
        RequestTimings& timings = requests_.at(scheduled.id).timings;
        if (timings.scheduled()) continue;
        timings.first_scheduled = now;
        timings.num_cached_prompt_tokens = scheduled.start;  // a first schedule starts after the prefix-cache hit
    }
}

// One sequence per scheduled request, its tokens [start, start + num_tokens) in order; logits for the token that
// completes the request's known tokens (a prompt chunk that does not finish the prompt samples nothing) and, while a
// request gathers prompt log-probabilities, for each prompt position followed by another prompt token.
void Engine::build_batch(const scheduler::StepPlan& plan) {
    batch_.clear();
    batch_.num_groups = kv_->num_groups();
    logit_rows_.clear();
    std::vector<std::span<const int32_t>> tables(static_cast<size_t>(kv_->num_groups()));
    int64_t num_rows = 0;
    for (const auto& scheduled : plan.requests) {
        const scheduler::Request* request = scheduler_->find(scheduled.id);
        TERN_CHECK(request != nullptr) << "scheduled request " << scheduled.id << " is unknown";
        for (int group = 0; group < kv_->num_groups(); ++group) tables[group] = kv_->block_ids(scheduled.id, group);
        const int32_t sequence = batch_.add_sequence(tables);
        const int end = scheduled.start + scheduled.num_tokens;
        const RequestState& state = requests_.at(scheduled.id);
        const std::optional<Pooling> pooling = state.pooling;
        const int prompt_rows_end = gathers_prompt_logprobs(state) ? request->num_prompt_tokens() - 1 : 0;
        LogitRows rows{.first = num_rows};
        // The step samples when it reaches the known tokens' end: from the last known position on, every row
        // (drafts follow it) has logits.
        const int num_known = request->num_tokens();
        const bool samples = samples_this_step(scheduled);
        for (int position = scheduled.start; position < end; ++position) {
            const bool sampling_row = samples && position >= num_known - 1;
            const bool last = position == end - 1 && samples;
            const bool hidden = pooling && (*pooling == Pooling::kMean || last);
            const bool prompt_row = position < prompt_rows_end;
            rows.num_prompt += prompt_row ? 1 : 0;
            const bool logits = (sampling_row && !pooling) || prompt_row;
            num_rows += logits ? 1 : 0;
            const int32_t token = position < num_known
                                      ? request->tokens[static_cast<size_t>(position)]
                                      : request->draft_tokens[static_cast<size_t>(position - num_known)];
            batch_.add(token, position, sequence, logits, hidden);
        }
        logit_rows_.push_back(rows);
    }
}

// The forward pass left one hidden row per token that wanted one, in batch order: each embedding request's rows go
// into its sum (mean pooling) or replace its last row (last-token pooling, one row, in its final chunk).
void Engine::take_hidden_states(const scheduler::StepPlan& plan) {
    const int64_t dim = model_.hparams().embedding_dim;
    const float* row = hidden_.data();
    for (const auto& scheduled : plan.requests) {
        RequestState& state = requests_.at(scheduled.id);
        if (!state.pooling) continue;
        const bool last_chunk = samples_this_step(scheduled);
        const int64_t num_rows = *state.pooling == Pooling::kMean ? scheduled.num_tokens : (last_chunk ? 1 : 0);
        state.embedding_sum.resize(static_cast<size_t>(dim), 0.0);
        for (int64_t row_idx = 0; row_idx < num_rows; ++row_idx, row += dim) {
            for (int64_t idx = 0; idx < dim; ++idx) state.embedding_sum[static_cast<size_t>(idx)] += row[idx];
        }
        state.num_embedded_tokens += num_rows;
    }
    TERN_CHECK(row == hidden_.data() + hidden_.size()) << "hidden rows left unassigned";
}

// A request's prompt rows are its first positions of the step, from `start` on: row k holds the logits after
// prompt token start + k, which give the log-probability of prompt token start + k + 1.
void Engine::take_prompt_logprobs(const scheduler::StepPlan& plan) {
    const int64_t vocab_size = model_.hparams().vocab_size;
    for (size_t idx = 0; idx < plan.requests.size(); ++idx) {
        const LogitRows& rows = logit_rows_[idx];
        if (rows.num_prompt == 0) continue;
        const auto& scheduled = plan.requests[idx];
        RequestState& state = requests_.at(scheduled.id);
        TERN_CHECK(state.prompt_logprobs.size() == static_cast<size_t>(scheduled.start))
            << "request " << scheduled.id << " has prompt log-probabilities for " << state.prompt_logprobs.size()
            << " positions before a chunk that starts at " << scheduled.start;
        const std::vector<int32_t>& tokens = scheduler_->find(scheduled.id)->tokens;
        for (int row = 0; row < rows.num_prompt; ++row) {
            const float* logits = logits_.data() + (rows.first + row) * vocab_size;
            const int32_t next = tokens[static_cast<size_t>(scheduled.start + row + 1)];
            state.prompt_logprobs.push_back(
                token_logprobs(logits, vocab_size, next, state.num_prompt_logprobs, state.sampler));
        }
    }
}

std::vector<float> Engine::pooled_embedding(const RequestState& state) const {
    const int64_t expected_rows = *state.pooling == Pooling::kMean ? state.timings.num_prompt_tokens : 1;
    TERN_CHECK(state.num_embedded_tokens == expected_rows)
        << "an embedding pooled " << state.num_embedded_tokens << " states, expected " << expected_rows;
    double squares = 0.0;
    for (double value : state.embedding_sum) squares += value * value;
    // The mean's scale cancels in the normalization: dividing the sum by its norm is dividing the mean by its own.
    const double scale = squares > 0.0 ? 1.0 / std::sqrt(squares) : 0.0;
    std::vector<float> embedding;
    embedding.reserve(state.embedding_sum.size());
    for (double value : state.embedding_sum) embedding.push_back(static_cast<float>(value * scale));
    return embedding;
}

// One output per token gained (a step that accepted drafts gives several), the finish with the last.
void Engine::collect(const std::vector<scheduler::RequestUpdate>& updates, StepLogprobs& logprobs,
                     std::vector<RequestOutput>& outputs) {
    const Clock::time_point now = Clock::now();
    for (const auto& update : updates) {
        auto found_state = requests_.find(update.id);
        TERN_CHECK(found_state != requests_.end()) << "update for unknown request " << update.id;
        RequestState& state = found_state->second;
        auto found_logprobs = logprobs.find(update.id);
        for (size_t idx = 0; idx < update.tokens.size(); ++idx) {
            RequestOutput output{.id = update.id, .token = update.tokens[idx]};
            state.timings.token_times.push_back(now);
            ++counters_.num_generated_tokens;
            if (found_logprobs != logprobs.end()) output.logprobs = std::move(found_logprobs->second.at(idx));
            if (gathers_prompt_logprobs(state)) report_prompt_logprobs(state, output);
            outputs.push_back(std::move(output));
        }
        if (!update.finish_reason) continue;
        if (update.tokens.empty()) outputs.push_back(RequestOutput{.id = update.id});
        RequestOutput& output = outputs.back();
        output.finish_reason = update.finish_reason;
        if (state.pooling) output.embedding = pooled_embedding(state);
        if (state.grammar && state.grammar->overloaded()) {
            output.error = "the grammar needs too much parser work per token (an ambiguous grammar, such as "
                           "root ::= root root | \"a\", is cubic in the text's length): make it unambiguous";
            log_warn("request {}: ended early: {}", update.id, *output.error);
        }
        state.timings.finish = now;
        trace_request_life(update.id, state.timings);
        output.timings = std::move(state.timings);
        requests_.erase(found_state);
    }
}

// Once, with the first token: the prompt is computed by then (the step that samples it finished the prompt).
void Engine::report_prompt_logprobs(RequestState& state, RequestOutput& output) {
    TERN_CHECK(state.prompt_logprobs.size() == static_cast<size_t>(std::max(state.timings.num_prompt_tokens - 1, 0)))
        << "request " << output.id << " has " << state.prompt_logprobs.size() << " prompt log-probabilities for "
        << state.timings.num_prompt_tokens << " prompt tokens";
    output.prompt_logprobs = std::move(state.prompt_logprobs);
    state.prompt_logprobs = {};
    state.prompt_logprobs_reported = true;
}

EngineStats Engine::stats() const {
    EngineStats stats = counters_;
    stats.num_running = scheduler_->num_running();
    stats.num_waiting = scheduler_->num_waiting();
    stats.num_queued_tokens = scheduler_->num_queued_tokens();
    stats.kv_usage = kv_->usage();
    stats.prefix_cache = kv_->prefix_cache_stats();
    return stats;
}

}  // namespace tern::engine
