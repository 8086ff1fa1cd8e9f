// Request arrival processes, as in `vllm bench serve`: a Poisson process at --request-rate R (exponential gaps of mean
// 1/R), or with --burstiness K gaps drawn from Gamma(shape K, scale 1/(R*K)), which keeps the mean rate R while K < 1
// makes arrivals burstier and K > 1 more regular. R = inf sends every request at once. The gaps are not rescaled to hit
// N/R exactly (vLLM does that), so the arrivals are a true renewal process.
#pragma once

#include <cstdint>
#include <limits>
#include <random>

#include "base/status.h"

namespace tern::bench {

struct ArrivalOptions {
    double request_rate = std::numeric_limits<double>::infinity();  // requests per second; inf = all at time 0
    double burstiness = 1.0;  // Gamma shape K; 1 = Poisson; inf = evenly spaced at 1/R
};

// kInvalidArgument when the rate is not > 0 or the burstiness not > 0.
Status validate(const ArrivalOptions& options);

// Draws inter-arrival gaps in seconds. Deterministic for a seed. Not thread-safe.
class GapSampler {
public:
    GapSampler(const ArrivalOptions& options, uint64_t seed);
    double next_gap_s();

private:
    ArrivalOptions options_;
    std::mt19937_64 rng_;
    std::gamma_distribution<double> gamma_;
};

}  // namespace tern::bench
