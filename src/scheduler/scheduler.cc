#include "scheduler/scheduler.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "base/check.h"

namespace tern::scheduler {

std::string_view finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::kStop: return "stop";
        case FinishReason::kLength: return "length";
        case FinishReason::kAbort: return "abort";
    }
    return "unknown";
}

Status SchedulerConfig::validate() const {
    if (max_batched_tokens < 1) return invalid_argument("max batched tokens must be >= 1");
    if (max_running < 1) return invalid_argument("the cap on running sequences must be >= 1");
    if (max_queued_requests < 1) return invalid_argument("max queued requests must be >= 1");
    if (max_queued_tokens < 1) return invalid_argument("max queued tokens must be >= 1");
    if (max_model_len < 2) return invalid_argument("the context length must be >= 2 tokens");
    return Status::ok();
}

namespace {

const SchedulerConfig& checked(const SchedulerConfig& config) {
    Status status = config.validate();
    TERN_CHECK(status.is_ok()) << status.message();
    return config;
}

Status queue_full(std::string message) { return {StatusCode::kResourceExhausted, std::move(message)}; }

}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config, kv::KvManager& kv)
    : config_(checked(config)), max_batched_tokens_at_creation_(config.max_batched_tokens), kv_(kv) {}

Status Scheduler::check_admission(const RequestParams& params) const {
    std::string id = "request " + std::to_string(params.id);
    if (requests_.contains(params.id)) return invalid_argument(id + " is already queued or running");
    if (params.prompt.empty()) return invalid_argument(id + " has an empty prompt");
    if (params.max_tokens < 1) return invalid_argument(id + ": max_tokens must be >= 1");
    int64_t num_prompt = static_cast<int64_t>(params.prompt.size());
    int64_t num_total = num_prompt + params.max_tokens;
    if (num_total > config_.max_model_len) {
        return invalid_argument(id + " can never fit: prompt (" + std::to_string(num_prompt) + ") + max_tokens (" +
                                std::to_string(params.max_tokens) + ") exceeds the context length of " +
                                std::to_string(config_.max_model_len) + " tokens");
    }
    // The last sampled token is never computed, so it needs no slot.
    const int64_t num_blocks = kv_.max_blocks_held(num_total - 1, config_.max_batched_tokens);
    if (num_blocks > kv_.pool().num_usable_blocks()) {
        return invalid_argument(id + " can never fit: it needs " + std::to_string(num_blocks) +
                                " KV blocks but the whole pool has " + std::to_string(kv_.pool().num_usable_blocks()));
    }
    if (num_waiting() >= config_.max_queued_requests) {
        return queue_full(id + " rejected: the waiting queue holds " + std::to_string(num_waiting()) +
                          " requests, the limit (max queued requests)");
    }
    if (num_queued_tokens_ + num_prompt > config_.max_queued_tokens) {
        return queue_full(id + " rejected: its " + std::to_string(num_prompt) + " prompt tokens would bring the " +
                          "waiting queue to " + std::to_string(num_queued_tokens_ + num_prompt) +
                          " tokens, over the limit of " + std::to_string(config_.max_queued_tokens) +
                          " (max queued tokens)");
    }
    return Status::ok();
}

Status Scheduler::add_request(RequestParams params) {
    TERN_RETURN_IF_ERROR(check_admission(params));
    RequestId id = params.id;
    Request request;
    request.tokens = params.prompt;
    request.params = std::move(params);
    request.arrival = next_arrival_++;
    to_waiting(requests_.emplace(id, std::move(request)).first->second);
    return Status::ok();
}

Status Scheduler::set_step_limits(int max_batched_tokens, int max_running) {
    SchedulerConfig config = config_;
    config.max_batched_tokens = max_batched_tokens;
    config.max_running = max_running;
    TERN_RETURN_IF_ERROR(config.validate());
    if (max_batched_tokens > max_batched_tokens_at_creation_) {
        return invalid_argument("the step's token budget can only be lowered, here from " +
                                std::to_string(max_batched_tokens_at_creation_) + ", not raised to " +
                                std::to_string(max_batched_tokens));
    }
    config_ = config;
    return Status::ok();
}

StepPlan Scheduler::schedule() {
    StepPlan plan;
    int budget = config_.max_batched_tokens;
    // Running requests by priority, so that memory pressure preempts from the back (the least important).
    for (auto it = running_.begin(); it != running_.end() && budget > 0;) {
        QueueKey key = *it;
        schedule_running(get(key.id), plan, budget);
        it = running_.upper_bound(key);  // victims are erased behind `key`, `key` itself maybe too
    }
    // As in vLLM, no admissions in a step that preempted: the memory is short.
    if (!plan.preempted.empty()) return plan;
    while (!waiting_.empty() && budget > 0 && num_running() < config_.max_running) {
        if (!schedule_waiting(get(waiting_.begin()->id), plan, budget)) break;
    }
    return plan;
}

bool Scheduler::schedule_running(Request& request, StepPlan& plan, int& budget) {
    const int num_new = std::min(request.num_tokens() - request.num_computed_tokens, budget);
    TERN_CHECK(num_new > 0) << "running request " << request.params.id << " has nothing to compute";
    int num_drafts = std::min(static_cast<int>(request.draft_tokens.size()), budget - num_new);
    // Drafts only where the budget and free blocks allow: speculation never preempts anyone.
    if (num_drafts > 0) {
        std::vector<TokenId> with_drafts = request.tokens;  // slots for the drafts; only known tokens are ever hashed
        with_drafts.insert(with_drafts.end(), request.draft_tokens.begin(), request.draft_tokens.begin() + num_drafts);
        if (!kv_.allocate_slots(request.params.id, with_drafts, request.num_computed_tokens, num_new + num_drafts)) {
            num_drafts = 0;
        }
    }
    if (num_drafts == 0) {
        while (!kv_.allocate_slots(request.params.id, request.tokens, request.num_computed_tokens, num_new)) {
            Request& victim = get(std::prev(running_.end())->id);
            preempt(victim, plan, budget);
            if (&victim == &request) return false;
        }
    }
    plan.requests.push_back({request.params.id, request.num_computed_tokens, num_new + num_drafts, num_drafts});
    plan.num_tokens += num_new + num_drafts;
    budget -= num_new + num_drafts;
    return true;
}

bool Scheduler::schedule_waiting(Request& request, StepPlan& plan, int& budget) {
    // A request preempted in this step waits for the next one rather than thrashing.
    if (std::ranges::find(plan.preempted, request.params.id) != plan.preempted.end()) return false;
    const std::string& salt = request.params.cache_salt;
    kv::ComputedBlocks hit =
        request.params.use_cached_prefix ? kv_.get_computed_blocks(request.tokens, salt) : kv::ComputedBlocks{};
    int num_new = std::min(request.num_tokens() - hit.num_tokens, budget);
    while (!kv_.allocate_slots(request.params.id, request.tokens, 0, num_new, hit, salt)) {
        // A more important arrival takes memory from less important running requests. Freeing them neither
        // evicts nor reuses blocks, and only computed blocks are ever cached, so `hit` stays valid and holds KV.
        if (running_.empty() || std::prev(running_.end())->priority <= request.params.priority) return false;
        preempt(get(std::prev(running_.end())->id), plan, budget);
    }
    request.num_computed_tokens = hit.num_tokens;
    to_running(request);
    plan.requests.push_back({request.params.id, request.num_computed_tokens, num_new});
    plan.num_tokens += num_new;
    budget -= num_new;
    return true;
}

void Scheduler::preempt(Request& victim, StepPlan& plan, int& budget) {
    auto entry = std::ranges::find(plan.requests, victim.params.id, &ScheduledRequest::id);
    if (entry != plan.requests.end()) {
        budget += entry->num_tokens;
        plan.num_tokens -= entry->num_tokens;
        plan.requests.erase(entry);
    }
    kv_.free(victim.params.id);
    running_.erase(queue_key(victim));
    // Recompute: the KV is gone, but its computed full blocks stay in the prefix cache until evicted, so resuming
    // usually gets most of them back (blocks allocated for this step were never computed, so never cached).
    victim.num_computed_tokens = 0;
    victim.draft_tokens.clear();
    ++victim.num_preemptions;
    ++num_preemptions_;
    to_waiting(victim);
    plan.preempted.push_back(victim.params.id);
}

std::vector<RequestUpdate> Scheduler::update_from_step(const StepPlan& plan, const SampledTokens& sampled) {
    std::vector<RequestUpdate> updates;
    for (const ScheduledRequest& entry : plan.requests) {
        auto it = requests_.find(entry.id);
        if (it == requests_.end() || it->second.state != RequestState::kRunning) continue;  // aborted meanwhile
        Request& request = it->second;
        TERN_CHECK(request.num_computed_tokens == entry.start)
            << "request " << entry.id << " has " << request.num_computed_tokens << " computed tokens but the plan "
            << "started at " << entry.start << "; schedule() and update_from_step() must alternate";
        request.draft_tokens.clear();
        request.num_computed_tokens += entry.num_tokens - entry.num_draft_tokens;
        RequestUpdate update{entry.id, {}, std::nullopt};
        if (request.num_computed_tokens == request.num_tokens() && request.params.prompt_only) {
            kv_.cache_computed_blocks(entry.id, request.tokens, request.num_computed_tokens);
            update.finish_reason = FinishReason::kStop;
            finish(request);
        } else if (request.num_computed_tokens == request.num_tokens()) {
            auto found = sampled.find(entry.id);
            TERN_CHECK(found != sampled.end() && !found->second.empty()) << "no sampled token for request " << entry.id;
            TERN_CHECK(found->second.size() <= static_cast<size_t>(entry.num_draft_tokens) + 1)
                << "request " << entry.id << " got " << found->second.size() << " tokens for "
                << entry.num_draft_tokens << " drafts";
            // The accepted drafts' KV was computed in this step: every returned token but the last.
            request.num_computed_tokens += static_cast<int>(found->second.size()) - 1;
            append_tokens(request, found->second, update);
        } else {
            kv_.cache_computed_blocks(entry.id, request.tokens, request.num_computed_tokens);
        }
        updates.push_back(std::move(update));
    }
    return updates;
}

// Appends sampled tokens up to the first that ends the request, caches the computed blocks, and finishes it if it ended.
void Scheduler::append_tokens(Request& request, const std::vector<TokenId>& tokens, RequestUpdate& update) {
    for (TokenId token : tokens) {
        request.tokens.push_back(token);
        update.tokens.push_back(token);
        if (std::ranges::find(request.params.stop_tokens, token) != request.params.stop_tokens.end()) {
            update.finish_reason = FinishReason::kStop;
        } else if (request.num_output_tokens() >= request.params.max_tokens) {
            update.finish_reason = FinishReason::kLength;
        }
        if (update.finish_reason) break;
    }
    // Tokens after one that ended the request were dropped, and the KV of their drafts with them.
    request.num_computed_tokens = std::min(request.num_computed_tokens, request.num_tokens());
    // A finished request's blocks are cached too: a follow-up (the next chat turn) starts with its text.
    kv_.cache_computed_blocks(request.params.id, request.tokens, request.num_computed_tokens);
    if (update.finish_reason) finish(request);
}

Status Scheduler::set_draft_tokens(RequestId id, std::vector<TokenId> drafts) {
    auto it = requests_.find(id);
    if (it == requests_.end()) return not_found("request " + std::to_string(id) + " is not queued or running");
    Request& request = it->second;
    if (!request.is_decoding()) {
        return invalid_argument("request " + std::to_string(id) + " is not decoding: drafts follow a sampled token");
    }
    const int num_allowed = request.params.max_tokens - request.num_output_tokens() - 1;
    if (static_cast<int>(drafts.size()) > num_allowed) drafts.resize(static_cast<size_t>(std::max(num_allowed, 0)));
    request.draft_tokens = std::move(drafts);
    return Status::ok();
}

Status Scheduler::abort(RequestId id) {
    auto it = requests_.find(id);
    if (it == requests_.end()) return not_found("request " + std::to_string(id) + " is not queued or running");
    finish(it->second);
    return Status::ok();
}

const Request* Scheduler::find(RequestId id) const {
    auto it = requests_.find(id);
    return it == requests_.end() ? nullptr : &it->second;
}

void Scheduler::to_waiting(Request& request) {
    request.state = RequestState::kWaiting;
    waiting_.insert(queue_key(request));
    num_queued_tokens_ += request.num_tokens();
}

void Scheduler::to_running(Request& request) {
    waiting_.erase(queue_key(request));
    num_queued_tokens_ -= request.num_tokens();
    request.state = RequestState::kRunning;
    running_.insert(queue_key(request));
}

void Scheduler::finish(Request& request) {
    if (request.state == RequestState::kWaiting) {
        waiting_.erase(queue_key(request));
        num_queued_tokens_ -= request.num_tokens();
    } else {
        running_.erase(queue_key(request));
    }
    RequestId id = request.params.id;  // erase() must not read the key from the element it destroys
    kv_.free(id);
    requests_.erase(id);
}

Request& Scheduler::get(RequestId id) {
    auto it = requests_.find(id);
    TERN_CHECK(it != requests_.end()) << "unknown request " << id;
    return it->second;
}

}  // namespace tern::scheduler
