// One request as the scheduler sees it: token ids, how many of them have KV, its place in the queues, and how it
// ends. No text, no sampling parameters beyond what scheduling needs (the layer above owns those).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kv/kv_manager.h"

namespace tern::scheduler {

using kv::RequestId;
using kv::TokenId;

enum class FinishReason { kStop, kLength, kAbort };
std::string_view finish_reason_name(FinishReason reason);  // "stop", "length", "abort" (OpenAI's names)

enum class RequestState { kWaiting, kRunning };

struct RequestParams {
    RequestId id = 0;
    std::vector<TokenId> prompt;       // non-empty
    int max_tokens = 16;               // tokens to generate, >= 1
    int priority = 0;                  // lower is served first
    std::vector<TokenId> stop_tokens;  // sampling one of them finishes the request (it is kept as its last token)
    // The request ends once its prompt is computed, with no sampled token (embeddings).
    bool prompt_only = false;
    // False: no prefix-cache hits, because the caller needs every prompt token's state from the forward pass
    // (embeddings, prompt log-probabilities). Its computed blocks are still cached for others.
    bool use_cached_prefix = true;
    std::string cache_salt;  // prefix-cache hits only among requests with the same salt (vLLM's cache_salt)
};

struct Request {
    RequestParams params;
    std::vector<TokenId> tokens;  // prompt, then the generated tokens
    int num_computed_tokens = 0;  // tokens whose KV is in the cache (0 again after a preemption)
    int64_t arrival = 0;          // the scheduler's admission counter: the order within a priority class
    RequestState state = RequestState::kWaiting;
    int num_preemptions = 0;
    // Speculative decoding: proposed continuations of `tokens`, computed and verified with the request's next
    // decode; dropped by that step's update and by a preemption. Not part of `tokens` until verified.
    std::vector<TokenId> draft_tokens;

    int num_prompt_tokens() const { return static_cast<int>(params.prompt.size()); }
    int num_output_tokens() const { return static_cast<int>(tokens.size() - params.prompt.size()); }
    int num_tokens() const { return static_cast<int>(tokens.size()); }
    // Running with every token but the last sampled one computed: its next step decodes (drafts may follow).
    bool is_decoding() const { return state == RequestState::kRunning && num_computed_tokens + 1 == num_tokens(); }
};

// A request's place in a queue: priority class first, then arrival. A preempted request keeps its arrival, so it
// goes back ahead of everyone who came after it in its class.
struct QueueKey {
    int priority;
    int64_t arrival;
    RequestId id;
    auto operator<=>(const QueueKey&) const = default;
};

inline QueueKey queue_key(const Request& request) {
    return {request.params.priority, request.arrival, request.params.id};
}

}  // namespace tern::scheduler
