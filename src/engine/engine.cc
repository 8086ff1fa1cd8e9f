#include "engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace tern::engine {
namespace {

// log_softmax(logits)[token], in double so a long vocabulary's sum loses nothing.
float token_logprob(const float* logits, int64_t vocab_size, int32_t token) {
    const float max_logit = *std::max_element(logits, logits + vocab_size);
    double total = 0.0;
    for (int64_t idx = 0; idx < vocab_size; ++idx) total += std::exp(static_cast<double>(logits[idx] - max_logit));
    return static_cast<float>(static_cast<double>(logits[token] - max_logit) - std::log(total));
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(Model& model, ThreadPool& pool, const EngineConfig& config) {
    TERN_ASSIGN_OR_RETURN(EngineCapacity capacity, plan_capacity(model.hparams(), config));
    std::unique_ptr<Engine> engine(new Engine(model, pool, config, capacity));
    TERN_ASSIGN_OR_RETURN(engine->cache_, KvCache::create_paged(model.hparams(), capacity.num_blocks + 1,
                                                                config.block_size, config.kv_type));
    return engine;
}

Engine::Engine(Model& model, ThreadPool& pool, const EngineConfig& config, const EngineCapacity& capacity)
    : model_(model), pool_(pool), config_(config), capacity_(capacity) {
    kv_ = std::make_unique<kv::KvManager>(kv::KvCacheConfig{.block_size = config.block_size,
                                                            .num_blocks = static_cast<int>(capacity.num_blocks + 1),
                                                            .enable_prefix_caching = config.enable_prefix_caching});
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
    if (request.priority != 0 && config_.scheduling_policy == SchedulingPolicy::kFcfs) {
        return invalid_argument(fmt::format("request {}: priority {} needs the priority scheduling policy "
                                            "(--scheduling-policy priority); under fcfs every request has priority 0",
                                            request.id, request.priority));
    }
    const int num_prompt_tokens = static_cast<int>(request.prompt.size());
    scheduler::RequestParams params{.id = request.id, .prompt = request.prompt, .max_tokens = request.max_tokens,
                                    .priority = request.priority, .stop_tokens = request.stop_tokens,
                                    .prompt_only = request.embedding.has_value(), .cache_salt = request.cache_salt};
    TERN_RETURN_IF_ERROR(scheduler_->add_request(std::move(params)));
    // The sampler bans the stop tokens until sampling.min_tokens tokens are out (vLLM's min_tokens).
    RequestState state{Sampler(request.sampling, static_cast<int32_t>(vocab_size), request.stop_tokens),
                       RequestTimings{}, request.num_top_logprobs};
    state.sampler.accept_prompt(request.prompt);
    state.pooling = request.embedding;
    state.timings.arrival = request.arrival == Clock::time_point{} ? Clock::now() : request.arrival;
    state.timings.num_prompt_tokens = num_prompt_tokens;
    requests_.insert_or_assign(request.id, std::move(state));
    counters_.num_prompt_tokens += num_prompt_tokens;
    return Status::ok();
}

Status Engine::abort(RequestId id) {
    TERN_RETURN_IF_ERROR(scheduler_->abort(id));
    auto found = requests_.find(id);
    TERN_CHECK(found != requests_.end()) << "engine lost track of request " << id;
    found->second.timings.finish = Clock::now();
    pending_outputs_.push_back(RequestOutput{.id = id, .finish_reason = FinishReason::kAbort,
                                             .timings = std::move(found->second.timings)});
    requests_.erase(found);
    return Status::ok();
}

Result<std::vector<RequestOutput>> Engine::step() {
    std::vector<RequestOutput> outputs = std::move(pending_outputs_);
    pending_outputs_.clear();
    const scheduler::StepPlan plan = scheduler_->schedule();
    counters_.num_preemptions += static_cast<int64_t>(plan.preempted.size());
    for (RequestId id : plan.preempted) {
        RequestState& state = requests_.at(id);
        ++state.timings.num_preemptions;
        state.embedding_sum.clear();  // recomputed from the first token
        state.num_embedded_tokens = 0;
    }
    if (plan.requests.empty()) return outputs;
    note_scheduled(plan, Clock::now());
    build_batch(plan);
    TERN_RETURN_IF_ERROR(model_.forward(batch_, cache_.get(), &pool_, &logits_, &hidden_));
    take_hidden_states(plan);
    std::unordered_map<RequestId, TokenLogprobs> logprobs;
    const auto sampled = sample(plan, logprobs);
    const auto updates = scheduler_->update_from_step(plan, sampled);
    collect(updates, logprobs, outputs);
    ++counters_.num_steps;
    counters_.last_step_tokens = plan.num_tokens;
    counters_.num_computed_tokens += plan.num_tokens;
    counters_.kv_live_tokens = 0;
    for (const auto& scheduled : plan.requests) {
        if (const scheduler::Request* request = scheduler_->find(scheduled.id)) {
            counters_.kv_live_tokens += request->num_computed_tokens;
        }
    }
    return outputs;
}

void Engine::note_scheduled(const scheduler::StepPlan& plan, Clock::time_point now) {
    for (const auto& scheduled : plan.requests) {
        RequestTimings& timings = requests_.at(scheduled.id).timings;
        if (timings.scheduled()) continue;
        timings.first_scheduled = now;
        timings.num_cached_prompt_tokens = scheduled.start;  // a first schedule starts after the prefix-cache hit
    }
}

// One sequence per scheduled request, its tokens [start, start + num_tokens) in order; logits only for the token
// that completes the request's known tokens (a prompt chunk that does not finish the prompt samples nothing).
void Engine::build_batch(const scheduler::StepPlan& plan) {
    batch_.clear();
    for (const auto& scheduled : plan.requests) {
        const scheduler::Request* request = scheduler_->find(scheduled.id);
        TERN_CHECK(request != nullptr) << "scheduled request " << scheduled.id << " is unknown";
        const int32_t sequence = batch_.add_sequence(kv_->block_ids(scheduled.id));
        const int end = scheduled.start + scheduled.num_tokens;
        const std::optional<Pooling> pooling = requests_.at(scheduled.id).pooling;
        for (int position = scheduled.start; position < end; ++position) {
            const bool last = position == end - 1 && end == request->num_tokens();
            const bool hidden = pooling && (*pooling == Pooling::kMean || last);
            batch_.add(request->tokens[static_cast<size_t>(position)], position, sequence, last && !pooling, hidden);
        }
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
        const bool last_chunk = scheduled.start + scheduled.num_tokens == scheduler_->find(scheduled.id)->num_tokens();
        const int64_t num_rows = *state.pooling == Pooling::kMean ? scheduled.num_tokens : (last_chunk ? 1 : 0);
        state.embedding_sum.resize(static_cast<size_t>(dim), 0.0);
        for (int64_t row_idx = 0; row_idx < num_rows; ++row_idx, row += dim) {
            for (int64_t idx = 0; idx < dim; ++idx) state.embedding_sum[static_cast<size_t>(idx)] += row[idx];
        }
        state.num_embedded_tokens += num_rows;
    }
    TERN_CHECK(row == hidden_.data() + hidden_.size()) << "hidden rows left unassigned";
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

std::unordered_map<RequestId, int32_t> Engine::sample(const scheduler::StepPlan& plan,
                                                      std::unordered_map<RequestId, TokenLogprobs>& logprobs) {
    const int64_t vocab_size = model_.hparams().vocab_size;
    std::unordered_map<RequestId, int32_t> sampled;
    int64_t row = 0;
    for (const auto& scheduled : plan.requests) {
        if (scheduled.start + scheduled.num_tokens != scheduler_->find(scheduled.id)->num_tokens()) continue;
        if (requests_.at(scheduled.id).pooling) continue;  // an embedding: no logits, nothing to sample
        const float* logits = logits_.data() + row * vocab_size;
        ++row;
        RequestState& state = requests_.at(scheduled.id);
        const int32_t token = state.sampler.sample(logits);
        state.sampler.accept(token);
        sampled.emplace(scheduled.id, token);
        if (state.num_top_logprobs >= 0) {
            logprobs[scheduled.id] = TokenLogprobs{token_logprob(logits, vocab_size, token),
                                                   state.sampler.top_logprobs(logits, state.num_top_logprobs)};
        }
    }
    return sampled;
}

void Engine::collect(const std::vector<scheduler::RequestUpdate>& updates,
                     std::unordered_map<RequestId, TokenLogprobs>& logprobs, std::vector<RequestOutput>& outputs) {
    const Clock::time_point now = Clock::now();
    for (const auto& update : updates) {
        auto state = requests_.find(update.id);
        TERN_CHECK(state != requests_.end()) << "update for unknown request " << update.id;
        RequestOutput output{.id = update.id, .token = update.token, .finish_reason = update.finish_reason};
        if (update.token) {
            state->second.timings.token_times.push_back(now);
            ++counters_.num_generated_tokens;
            if (auto found = logprobs.find(update.id); found != logprobs.end()) {
                output.logprobs = std::move(found->second);
            }
        }
        if (update.finish_reason) {
            if (state->second.pooling) output.embedding = pooled_embedding(state->second);
            state->second.timings.finish = now;
            output.timings = std::move(state->second.timings);
            requests_.erase(state);
        }
        if (output.token || output.finish_reason) outputs.push_back(std::move(output));
    }
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
