#include "bench/arrivals.h"

#include <fmt/format.h>

#include <cmath>

namespace tern::bench {

Status validate(const ArrivalOptions& options) {
    if (!(options.request_rate > 0)) {
        return invalid_argument(fmt::format("--request-rate must be > 0 (or inf), got {}", options.request_rate));
    }
    if (!(options.burstiness > 0)) {
        return invalid_argument(fmt::format("--burstiness must be > 0, got {}", options.burstiness));
    }
    return Status::ok();
}

GapSampler::GapSampler(const ArrivalOptions& options, uint64_t seed)
    : options_(options),
      rng_(seed),
      gamma_(std::isfinite(options.burstiness) ? options.burstiness : 1.0,
             std::isfinite(options.burstiness) && std::isfinite(options.request_rate)
                 ? 1.0 / (options.request_rate * options.burstiness)
                 : 1.0) {}

double GapSampler::next_gap_s() {
    if (!std::isfinite(options_.request_rate)) return 0.0;
    if (!std::isfinite(options_.burstiness)) return 1.0 / options_.request_rate;
    return gamma_(rng_);
}

}  // namespace tern::bench
