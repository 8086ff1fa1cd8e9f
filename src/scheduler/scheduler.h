// The continuous-batching scheduler (vLLM V1's model): there are no prefill and decode phases, only requests whose
// computed tokens lag behind their known tokens. Each step assigns {request: number of tokens} under a token
// budget: running requests first (decodes and partly prefilled prompts, by priority), then waiting requests in
// what is left, a prompt that does not fit getting a chunk. When the KV pool is short, the lowest-priority,
// latest-arrived running request is preempted by recompute. Pure bookkeeping on token ids and block ids.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/kv_manager.h"
#include "scheduler/request.h"

namespace tern::scheduler {

struct SchedulerConfig {
    int max_batched_tokens = 2048;       // tokens computed per step, all requests together
    int max_running = 256;               // sequences in a step
    int max_queued_requests = 1024;      // waiting requests beyond which add_request() rejects
    int64_t max_queued_tokens = 1 << 20; // tokens of waiting requests beyond which add_request() rejects
    int max_model_len = 4096;            // context length: prompt + max_tokens must fit

    Status validate() const;
};

// One request's share of a step: compute KV for tokens [start, start + num_tokens) of request `id`. The block
// table is KvManager::block_ids(id). When start + num_tokens reaches the request's known tokens, the step samples
// its next token; otherwise it was a chunk of a prompt and nothing is sampled. With num_draft_tokens = K > 0 the
// last K of those positions hold the request's first K draft tokens (past its known tokens): the step verifies them
// and samples one token after the last accepted one.
struct ScheduledRequest {
    RequestId id;
    int start;
    int num_tokens;
    int num_draft_tokens = 0;
    bool operator==(const ScheduledRequest&) const = default;
};

struct StepPlan {
    std::vector<ScheduledRequest> requests;  // running ones first, then newly admitted ones
    int num_tokens = 0;                      // their sum, <= max_batched_tokens
    std::vector<RequestId> preempted;        // preempted during this schedule(), in order
};

// What update_from_step() reports for one request: the tokens it gained (none for a prompt chunk; more than one when
// draft tokens were accepted) and, when it ended, why.
struct RequestUpdate {
    RequestId id;
    std::vector<TokenId> tokens;
    std::optional<FinishReason> finish_reason;
};

// The tokens a step produced per request: one for a plain decode, the accepted drafts then one more for a request
// whose drafts were verified.
using SampledTokens = std::unordered_map<RequestId, std::vector<TokenId>>;

// Not thread-safe: owned and called by the engine thread only. schedule() and update_from_step() alternate.
class Scheduler {
public:
    // `config` must validate (checked). The scheduler allocates and frees in `kv`, which must outlive it.
    Scheduler(const SchedulerConfig& config, kv::KvManager& kv);

    // Queues a request. Fails with kInvalidArgument for a malformed or never-fitting request (prompt + max_tokens
    // beyond the context, or more slots than the whole pool) and with kResourceExhausted when the waiting queue is
    // at max_queued_requests or would exceed max_queued_tokens; the message names the limit.
    Status add_request(RequestParams params);

    // Plans the next step; see the file comment. Requests preempted here are back in the waiting queue.
    StepPlan schedule();

    // Records that `plan` ran: advances computed tokens, appends the sampled tokens of every request whose known
    // tokens were all computed (`sampled` must hold them for each, prompt-only ones aside: they finish there; for an
    // entry with K draft tokens, between 1 and K + 1: the accepted drafts, in order, then the token after them),
    // finishes requests on a stop token or at max_tokens (tokens after that one are dropped) and frees their blocks.
    // Rejected drafts' positions stop counting as computed; their slots are rewritten by later steps. Entries of
    // requests aborted since schedule() are skipped.
    std::vector<RequestUpdate> update_from_step(const StepPlan& plan, const SampledTokens& sampled);

    // Speculative decoding: proposes `drafts` as the continuation of running request `id`, to be verified in the
    // request's next step. Only for a request that decodes (all its tokens but the last computed); drafts beyond
    // what max_tokens leaves (one fewer than the tokens it may still generate) are dropped. kNotFound for an unknown
    // request, kInvalidArgument for one that is waiting or still has prompt tokens to compute.
    Status set_draft_tokens(RequestId id, std::vector<TokenId> drafts);

    // Ends the request at once and frees its blocks; kNotFound for an unknown or finished id.
    Status abort(RequestId id);

    // Changes the step's token budget and the cap on running sequences from the next schedule() on (a server sizes
    // them from its measured speed after start). Requests already running above a lowered cap run on; admission
    // waits until they are under it. kInvalidArgument for a value below 1, or a budget above the one the scheduler
    // was created with: requests were admitted by the KV blocks a step of that size may make them hold.
    Status set_step_limits(int max_batched_tokens, int max_running);

    const Request* find(RequestId id) const;
    bool has_unfinished_requests() const { return !requests_.empty(); }
    int num_running() const { return static_cast<int>(running_.size()); }
    int num_waiting() const { return static_cast<int>(waiting_.size()); }
    int64_t num_queued_tokens() const { return num_queued_tokens_; }
    int64_t num_preemptions() const { return num_preemptions_; }
    double kv_usage() const { return kv_.usage(); }
    const SchedulerConfig& config() const { return config_; }

private:
    Status check_admission(const RequestParams& params) const;
    bool schedule_running(Request& request, StepPlan& plan, int& budget);
    bool schedule_waiting(Request& request, StepPlan& plan, int& budget);
    void append_tokens(Request& request, const std::vector<TokenId>& tokens, RequestUpdate& update);
    void preempt(Request& victim, StepPlan& plan, int& budget);
    void to_waiting(Request& request);
    void to_running(Request& request);
    void finish(Request& request);
    Request& get(RequestId id);

    SchedulerConfig config_;
    int max_batched_tokens_at_creation_;
    kv::KvManager& kv_;
    std::unordered_map<RequestId, Request> requests_;
    std::set<QueueKey> waiting_;
    std::set<QueueKey> running_;
    int64_t num_queued_tokens_ = 0;  // known tokens of the waiting requests
    int64_t num_preemptions_ = 0;
    int64_t next_arrival_ = 0;
};

}  // namespace tern::scheduler
