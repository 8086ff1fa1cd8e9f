// Request length distributions: a fixed length with vLLM's --random-range-ratio (uniform in [L(1-r), L(1+r)]), or a
// log-normal fitted to percentiles ("p50=800,p95=3000,p99=8000"), the usual shape of real prompt and output lengths.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tern::bench {

struct PercentilePoint {
    double percentile = 0;  // in (0, 100)
    double value = 0;       // > 0
};

// Parses "p50=800,p95=3000" (the 'p' is optional; spaces are allowed). Percentiles must be in (0, 100), distinct,
// and values > 0; points are returned sorted by percentile.
Result<std::vector<PercentilePoint>> parse_percentile_spec(std::string_view spec);

// The standard normal quantile function (probit), accurate to about 1e-9 over (0, 1).
double inverse_normal_cdf(double probability);

struct LogNormal {
    double mu = 0;     // mean of ln X
    double sigma = 0;  // standard deviation of ln X

    double quantile(double percentile) const;  // percentile in (0, 100)
};

// Least-squares fit of ln(value) = mu + sigma * z(percentile); two points give an exact fit. Needs at least two
// points, and values that grow with the percentile (else sigma would not be > 0).
Result<LogNormal> fit_lognormal(std::span<const PercentilePoint> points);

// How one length (input or output tokens) is drawn for each request.
struct LengthSpec {
    enum class Kind { kRange, kLogNormal };
    Kind kind = Kind::kRange;
    int64_t length = 0;       // kRange: the centre length
    double range_ratio = 0;   // kRange: in [0, 1)
    LogNormal lognormal;      // kLogNormal
    int64_t min_length = 1;   // samples are clamped to [min_length, max_length]
    int64_t max_length = 1'000'000;

    // kRange with ratio 0: always `length`.
    static LengthSpec fixed(int64_t length, double range_ratio = 0);
    static LengthSpec fitted(LogNormal lognormal);
};

// kInvalidArgument for a negative length, a ratio outside [0, 1), or min > max.
Status validate(const LengthSpec& spec, std::string_view what);

int64_t sample_length(const LengthSpec& spec, std::mt19937_64& rng);

}  // namespace tern::bench
