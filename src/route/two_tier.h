// Two-tier routing: a route names a small pool and a large one. The small model answers first (whole, with token
// logprobs asked for); the request goes to the large one when that answer looks weak: its mean token logprob is
// under a threshold, it stopped on length, or it contains a refusal phrase. Otherwise the small answer is the
// client's (the logprobs the router asked for removed, replayed as SSE if the client streamed). The decision needs
// the whole small answer, so a streamed request on such a route starts after it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "route/config.h"
#include "route/response_cache.h"

namespace tern::route {

struct Verdict {
    bool escalate = false;
    std::string reason;           // "logprob", "length", "refusal"; "" when the small answer stands
    double mean_logprob = 0;      // over the first choice's tokens; 0 when none were reported
    int64_t scored_tokens = 0;
};

// Judges a whole completions or chat answer of the small model.
Verdict judge(const nlohmann::json& answer, const TwoTierConfig& config);

// The body sent to the small pool: never streamed, with token logprobs asked for.
nlohmann::json small_tier_body(nlohmann::json body, bool chat);

// The small answer as the client asked for it: logprobs dropped unless the client asked, and for a streamed request
// SSE events (one chunk with the whole text, the usage chunk when asked for, [DONE]).
Recording client_answer(const nlohmann::json& small_answer, const nlohmann::json& client_body, bool chat);

}  // namespace tern::route
