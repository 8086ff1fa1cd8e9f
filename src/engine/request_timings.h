// When each event of a request's life happened, and the latencies users judge a server by, as vLLM defines them:
// TTFT (arrival -> first token), TPOT (mean gap between output tokens after the first), inter-token latencies,
// queue time (arrival -> first scheduled) and end-to-end latency (arrival -> finish).
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace tern::engine {

using Clock = std::chrono::steady_clock;

struct RequestTimings {
    Clock::time_point arrival;
    Clock::time_point first_scheduled;  // unset (epoch) until the scheduler first runs it
    Clock::time_point finish;
    std::vector<Clock::time_point> token_times;  // one per output token, when it was sampled
    int num_prompt_tokens = 0;
    int num_cached_prompt_tokens = 0;  // prompt tokens served from the prefix cache at first scheduling
    int num_preemptions = 0;

    bool scheduled() const { return first_scheduled != Clock::time_point{}; }
    double queue_seconds() const;           // 0 when never scheduled
    double ttft_seconds() const;            // -1 when no token was produced
    double tpot_seconds() const;            // 0 with fewer than two output tokens
    double e2e_seconds() const;
    std::vector<double> inter_token_seconds() const;  // gaps between consecutive output tokens
};

}  // namespace tern::engine
