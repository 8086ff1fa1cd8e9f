// Descriptive statistics over latency samples: numpy-compatible percentiles (linear interpolation), mean, standard
// deviation, and Welch's t statistic for comparing two runs. Pure functions, no I/O.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace tern::bench {

// The p-th percentile (p in [0, 100]) of `sorted` (ascending), interpolating linearly between the two nearest ranks
// as numpy.percentile does by default. Empty input gives 0, as vLLM reports for a metric with no samples.
double percentile_of_sorted(std::span<const double> sorted, double p);

struct Distribution {
    size_t count = 0;
    double mean = 0;
    double std = 0;  // population standard deviation (numpy.std)
    double min = 0;
    double median = 0;
    double p90 = 0;
    double p95 = 0;
    double p99 = 0;
    double max = 0;
};

// Summarizes `values` (any order). All fields are 0 for an empty input.
Distribution describe(std::vector<double> values);

// Welch's t statistic and its degrees of freedom for the difference of two sample means (b - a). Returns t = 0 when
// either sample has fewer than two values or both variances are zero.
struct WelchResult {
    double t = 0;
    double degrees_of_freedom = 0;
};
WelchResult welch_t(std::span<const double> a, std::span<const double> b);

// Two-sided p-value of a Student t statistic with `degrees_of_freedom` (regularized incomplete beta).
double student_t_two_sided_p(double t, double degrees_of_freedom);

}  // namespace tern::bench
