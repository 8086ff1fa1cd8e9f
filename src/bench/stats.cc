#include "bench/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tern::bench {
namespace {

// Continued fraction for the regularized incomplete beta function (modified Lentz), as in Numerical Recipes 6.4.
double beta_continued_fraction(double a, double b, double x) {
    constexpr double kTiny = 1e-300;
    constexpr double kEpsilon = 1e-14;
    double c = 1.0;
    double d = 1.0 - (a + b) * x / (a + 1.0);
    if (std::fabs(d) < kTiny) d = kTiny;
    d = 1.0 / d;
    double h = d;
    for (int step = 1; step <= 300; ++step) {
        const double m = step;
        const double even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
        d = 1.0 + even * d;
        c = 1.0 + even / c;
        d = 1.0 / (std::fabs(d) < kTiny ? kTiny : d);
        c = std::fabs(c) < kTiny ? kTiny : c;
        h *= d * c;
        const double odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
        d = 1.0 + odd * d;
        c = 1.0 + odd / c;
        d = 1.0 / (std::fabs(d) < kTiny ? kTiny : d);
        c = std::fabs(c) < kTiny ? kTiny : c;
        const double delta = d * c;
        h *= delta;
        if (std::fabs(delta - 1.0) < kEpsilon) break;
    }
    return h;
}

double regularized_incomplete_beta(double a, double b, double x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                             b * std::log1p(-x);
    const double front = std::exp(log_front);
    if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
    return 1.0 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double sample_variance(std::span<const double> values, double mean) {
    double sum = 0;
    for (double value : values) sum += (value - mean) * (value - mean);
    return sum / static_cast<double>(values.size() - 1);
}

}  // namespace

double percentile_of_sorted(std::span<const double> sorted, double p) {
    if (sorted.empty()) return 0;
    const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
    const size_t below = static_cast<size_t>(std::floor(rank));
    const size_t above = std::min(below + 1, sorted.size() - 1);
    const double fraction = rank - static_cast<double>(below);
    return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

Distribution describe(std::vector<double> values) {
    Distribution out;
    if (values.empty()) return out;
    std::sort(values.begin(), values.end());
    out.count = values.size();
    out.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
    double squares = 0;
    for (double value : values) squares += (value - out.mean) * (value - out.mean);
    out.std = std::sqrt(squares / static_cast<double>(values.size()));
    out.min = values.front();
    out.max = values.back();
    out.median = percentile_of_sorted(values, 50);
    out.p90 = percentile_of_sorted(values, 90);
    out.p95 = percentile_of_sorted(values, 95);
    out.p99 = percentile_of_sorted(values, 99);
    return out;
}

WelchResult welch_t(std::span<const double> a, std::span<const double> b) {
    if (a.size() < 2 || b.size() < 2) return {};
    const double mean_a = std::accumulate(a.begin(), a.end(), 0.0) / static_cast<double>(a.size());
    const double mean_b = std::accumulate(b.begin(), b.end(), 0.0) / static_cast<double>(b.size());
    const double var_a = sample_variance(a, mean_a) / static_cast<double>(a.size());
    const double var_b = sample_variance(b, mean_b) / static_cast<double>(b.size());
    if (var_a + var_b <= 0) return {};
    WelchResult result;
    result.t = (mean_b - mean_a) / std::sqrt(var_a + var_b);
    const double denominator = var_a * var_a / static_cast<double>(a.size() - 1) +
                               var_b * var_b / static_cast<double>(b.size() - 1);
    result.degrees_of_freedom = denominator > 0 ? (var_a + var_b) * (var_a + var_b) / denominator : 1.0;
    return result;
}

double student_t_two_sided_p(double t, double degrees_of_freedom) {
    if (degrees_of_freedom <= 0) return 1.0;
    const double x = degrees_of_freedom / (degrees_of_freedom + t * t);
    return regularized_incomplete_beta(degrees_of_freedom / 2.0, 0.5, x);
}

}  // namespace tern::bench
