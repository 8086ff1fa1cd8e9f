// The serving engine: continuous batching of many requests over one model and a paged KV cache. Each step() asks
// the scheduler for {request: tokens} under the step's token budget, runs one forward pass over that flat batch
// (prefill chunks and decodes mixed, attention reading each sequence's block table), samples the requests whose
// known tokens are all computed, and reports every new token and every finish. It speaks token ids only: text,
// stop strings and chat templates belong to the layer above. Not thread-safe: one thread drives it.
#pragma once

#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "engine/engine_config.h"
#include "engine/request_timings.h"
#include "grammar/token_masks.h"
#include "kv/kv_manager.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "scheduler/scheduler.h"
#include "spec/draft_model.h"

namespace tern::engine {

using scheduler::FinishReason;
using scheduler::RequestId;

// How an embedding request's per-token states become one vector: their mean, or the last token's (a decoder's
// last position has seen the whole text). Either is then scaled to unit length, as OpenAI's embeddings are.
enum class Pooling { kMean, kLast };

struct EngineRequest {
    RequestId id = 0;                  // unique among the requests the engine holds
    std::vector<int32_t> prompt;       // token ids, non-empty
    int max_tokens = 16;               // tokens to generate, >= 1
    int priority = 0;                  // lower is served first; must be 0 under SchedulingPolicy::kFcfs
    SamplingParams sampling;
    std::vector<int32_t> stop_tokens;  // e.g. EOS; sampling one ends the request (it is reported as its last token)
    int num_top_logprobs = -1;         // -1: no log-probabilities; n >= 0: the token's and the n most likely
    // -1: none; n >= 0: each prompt token's log-probability given the tokens before it, with the n most likely
    // tokens there (vLLM's prompt_logprobs). Such a request takes no prefix-cache hits, since every prompt position's
    // logits are needed; its chunks cost a logits row per token (at most max_batched_tokens x vocabulary floats).
    int num_prompt_logprobs = -1;
    // Set: compute the prompt and report its pooled final hidden state instead of generating (/v1/embeddings).
    std::optional<Pooling> embedding;
    std::string cache_salt;  // shares cached prefixes only with requests of the same salt (vLLM's cache_salt)
    // Set: every sampled token must continue the grammar's text (its vocabulary must be the model's: same size),
    // and the stop tokens are allowed only where the grammar's text may end.
    std::shared_ptr<const grammar::CompiledGrammar> grammar;
    // When the request reached the process (a server sets it on receipt, as vLLM's arrival_time): TTFT, queue and
    // end-to-end times count from it. Unset: when add_request() is called.
    Clock::time_point arrival{};
};

struct TokenLogprobs {
    float logprob = 0.0f;                            // of the token, from the raw logits
    int64_t rank = 1;                                // 1 + the number of tokens more likely than it (vLLM's rank)
    std::vector<std::pair<int32_t, float>> top;      // most likely first
};

// What step() reports for one request: a new token, a finish, or both.
struct RequestOutput {
    RequestId id = 0;
    std::optional<int32_t> token;
    std::optional<TokenLogprobs> logprobs;
    std::optional<FinishReason> finish_reason;
    std::optional<RequestTimings> timings;  // with the finish
    std::optional<std::vector<float>> embedding;  // with the finish of an embedding request: unit length
    // With the first token of a request that asked for them: one entry per prompt token from the second on (the first
    // token follows nothing).
    std::optional<std::vector<TokenLogprobs>> prompt_logprobs;
    // With the finish of a request that could not go on: why (its grammar needed more parser work than a request
    // may use). The client should get an error, not the text.
    std::optional<std::string> error;
};

struct EngineStats {
    int num_running = 0;
    int num_waiting = 0;
    int64_t num_queued_tokens = 0;         // prompt tokens of the waiting requests
    double kv_usage = 0.0;                 // fraction of usable blocks referenced by requests
    int64_t kv_live_tokens = 0;            // tokens with KV of the requests in the last step
    int64_t kv_token_capacity = 0;
    kv::PrefixCacheStats prefix_cache;
    int64_t num_preemptions = 0;
    int64_t num_prompt_tokens = 0;         // prompt tokens admitted
    int64_t num_computed_tokens = 0;       // tokens run through the model (recomputation included)
    int64_t num_generated_tokens = 0;
    int64_t num_steps = 0;
    int64_t last_step_tokens = 0;
    // Speculative decoding: requests x steps that verified drafts, the drafts verified, and those accepted
    // (acceptance rate: accepted / draft tokens; mean accepted length: 1 + accepted / drafts).
    int64_t num_drafts = 0;
    int64_t num_draft_tokens = 0;
    int64_t num_accepted_draft_tokens = 0;
};

class Engine {
public:
    // `model` and `pool` must outlive the engine. Allocates the KV cache for `config` (see plan_capacity()).
    // `draft_model` (which must outlive the engine too) is required by, and only taken with,
    // DraftMethod::kDraftModel; it may be `model` itself (a test of the machinery: every greedy draft is accepted).
    static Result<std::unique_ptr<Engine>> create(Model& model, ThreadPool& pool, const EngineConfig& config,
                                                  Model* draft_model = nullptr);

    // Queues a request. kInvalidArgument for a malformed or never-fitting one, or a non-zero priority under the fcfs
    // policy; kResourceExhausted when the waiting queue is full. The message says which limit.
    Status add_request(EngineRequest request);
    // Ends a request at once and frees its KV blocks; its final output (finish reason abort) comes with the next
    // step(). kNotFound for an unknown or finished id.
    Status abort(RequestId id);

    // Runs one step and returns what it produced (and any aborts since the last step). An error here is a bug
    // (inputs were validated on admission).
    Result<std::vector<RequestOutput>> step();

    bool has_unfinished_requests() const { return scheduler_->has_unfinished_requests(); }
    EngineStats stats() const;
    const EngineCapacity& capacity() const { return capacity_; }
    const EngineConfig& config() const { return config_; }
    // Lowers the step's token budget and sets the cap on running sequences from the next step on (see
    // Scheduler::set_step_limits; engine/step_budget.h sizes them from measured speed). config() shows the new ones.
    Status set_step_limits(int max_batched_tokens, int max_running);
    // Drops cached prefixes (only while no request holds blocks); for benchmarks that compare cold runs.
    bool reset_prefix_cache() { return kv_->reset_prefix_cache(); }
    // The KV manager's invariants (block tables, reference counts, free queue, prefix-cache map); for tests.
    Status verify() const { return kv_->verify(); }

private:
    struct RequestState {
        Sampler sampler;
        RequestTimings timings;
        int num_top_logprobs;
        int num_prompt_logprobs = -1;
        std::vector<TokenLogprobs> prompt_logprobs;  // gathered chunk by chunk until they are reported
        bool prompt_logprobs_reported = false;
        std::optional<Pooling> pooling;      // an embedding request
        std::optional<grammar::GrammarMatcher> grammar;  // the request's progress through its grammar
        grammar::TokenMask allowed = grammar::TokenMask();  // the grammar's mask for the next token
        std::vector<int32_t> stop_tokens;
        std::vector<double> embedding_sum;   // of the hidden states it got (mean) or the last one (last)
        int64_t num_embedded_tokens = 0;
        // Speculative decoding since this request's drafting last (re)started: verifying steps, the tokens they gave
        // (accepted drafts + 1 each), and the output length before which it proposes nothing (drafts that keep
        // failing cost more than they give).
        int num_verifications = 0;
        int num_verified_tokens = 0;
        int drafts_paused_until = 0;
        int pause_tokens = 0;  // the last pause's length (each failed judgement in a row doubles it)
        // With a draft model: positions [0, draft_kv_end) hold its KV (spec/draft_model.h); it proposes after
        // catching up on the rest.
        int draft_kv_end = 0;
    };

    Engine(Model& model, ThreadPool& pool, const EngineConfig& config, const EngineCapacity& capacity);
    Result<scheduler::StepPlan> schedule();
    void build_batch(const scheduler::StepPlan& plan);
    Status forward(const scheduler::StepPlan& plan);
    void count_step(const scheduler::StepPlan& plan);
    void note_scheduled(const scheduler::StepPlan& plan, Clock::time_point now);
    bool gathers_prompt_logprobs(const RequestState& state) const {
        return state.num_prompt_logprobs >= 0 && !state.prompt_logprobs_reported;
    }
    void take_hidden_states(const scheduler::StepPlan& plan);
    void take_prompt_logprobs(const scheduler::StepPlan& plan);
    std::vector<float> pooled_embedding(const RequestState& state) const;
    void fill_grammar_mask(RequestState& state);
    void fill_grammar_masks(const scheduler::StepPlan& plan);
    // `tokens_left`: what max_tokens leaves, this step's token included.
    int32_t sample_with_grammar(RequestState& state, const float* logits, int tokens_left);
    // Advances the request's grammar by `token`; false when the grammar was overloaded (the request then ends).
    bool advance_grammar(RequestState& state, int32_t token);
    // Whether the step computes the last of the request's known tokens, so that it samples the next one.
    bool samples_this_step(const scheduler::ScheduledRequest& scheduled) const {
        return scheduled.start + scheduled.num_tokens - scheduled.num_draft_tokens ==
               scheduler_->find(scheduled.id)->num_tokens();
    }
    // Per request, the log-probabilities of each token it gained in the step (when it asked for them).
    using StepLogprobs = std::unordered_map<RequestId, std::vector<TokenLogprobs>>;
    scheduler::SampledTokens sample(const scheduler::StepPlan& plan, StepLogprobs& logprobs);
    // The accepted drafts of a request and the token after them, each accepted into its sampler.
    std::vector<int32_t> verify_drafts(RequestState& state, const scheduler::ScheduledRequest& scheduled,
                                       const float* rows, std::vector<TokenLogprobs>* logprobs);
    // Sets the next step's drafts of the requests that decode (none while the batch is large or for a grammar). A
    // draft model's are placeholders, so that the scheduler reserves their slots; fill_model_drafts() computes the
    // ones the step has room for.
    void propose_drafts();
    Status fill_model_drafts(const scheduler::StepPlan& plan);
    // Runs the draft model over up to max_batched_tokens of the known tokens its cache lacks, for requests too far
    // behind to catch up within a drafting step.
    Status catch_up_draft_kv(const std::vector<RequestId>& ids);
    // A request whose verifying steps give fewer tokens than this pauses its drafts: config's, or break-even with a
    // margin for its drafting method (`draft`: the draft model, or nullptr for prompt lookup).
    static double min_tokens_per_verification(const SpeculativeConfig& config, const Model& target,
                                              const Model* draft);
    // A new request's drafting pause: with a draft model, the last judged request's.
    void start_drafting_state(RequestState& state) const;
    // False while the request's drafting is paused for giving too little; judges its last verifications.
    bool drafting_pays(RequestState& state, int num_output_tokens);
    void report_prompt_logprobs(RequestState& state, RequestOutput& output);
    void collect(const std::vector<scheduler::RequestUpdate>& updates, StepLogprobs& logprobs,
                 std::vector<RequestOutput>& outputs);

    Model& model_;
    ThreadPool& pool_;
    EngineConfig config_;
    EngineCapacity capacity_;
    std::unique_ptr<KvCache> cache_;
    std::unique_ptr<kv::KvManager> kv_;
    std::unique_ptr<scheduler::Scheduler> scheduler_;
    std::unique_ptr<spec::DraftModel> draft_;  // with DraftMethod::kDraftModel
    // A request whose verifying steps give fewer tokens than this on average pauses its drafts (drafting_pays()).
    double min_tokens_per_verification_ = 0.0;
    int last_draft_model_pause_ = 0;  // the last judgement's pause (0: its drafts paid), with a draft model
    std::unordered_map<RequestId, RequestState> requests_;
    std::vector<RequestOutput> pending_outputs_;  // aborts, reported by the next step()
    TokenBatch batch_;
    std::vector<float> logits_;
    // Per scheduled request of the step, in plan order: its first row in logits_ and how many of its rows are prompt
    // positions (for prompt log-probabilities); the sampling rows, if any, follow them: one, or one per draft and
    // one after the last draft.
    struct LogitRows {
        int64_t first = 0;
        int num_prompt = 0;
    };
    std::vector<LogitRows> logit_rows_;
    std::vector<float> hidden_;  // the step's hidden-state rows of embedding requests, in batch order
    EngineStats counters_;
};

}  // namespace tern::engine
