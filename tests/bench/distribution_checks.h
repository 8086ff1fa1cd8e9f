// Reference distribution functions and the one-sample Kolmogorov-Smirnov statistic, for checking that generated
// samples follow the distribution they were asked for.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace tern::testing {

// Regularized lower incomplete gamma P(a, x): series for x < a + 1, continued fraction otherwise (Numerical Recipes
// 6.2).
inline double regularized_gamma_p(double a, double x) {
    if (x <= 0) return 0;
    const double log_front = a * std::log(x) - x - std::lgamma(a);
    if (x < a + 1) {
        double term = 1.0 / a;
        double sum = term;
        for (int n = 1; n < 1000; ++n) {
            term *= x / (a + n);
            sum += term;
            if (std::fabs(term) < std::fabs(sum) * 1e-15) break;
        }
        return sum * std::exp(log_front);
    }
    double b = x + 1 - a;
    double c = 1e300;
    double d = 1 / b;
    double h = d;
    for (int n = 1; n < 1000; ++n) {
        const double an = -n * (n - a);
        b += 2;
        d = an * d + b;
        if (std::fabs(d) < 1e-300) d = 1e-300;
        c = b + an / c;
        if (std::fabs(c) < 1e-300) c = 1e-300;
        d = 1 / d;
        const double delta = d * c;
        h *= delta;
        if (std::fabs(delta - 1) < 1e-15) break;
    }
    return 1 - std::exp(log_front) * h;
}

// CDF of Gamma(shape, scale).
inline double gamma_cdf(double x, double shape, double scale) { return regularized_gamma_p(shape, x / scale); }

// sup |F_n(x) - F(x)| over the samples.
inline double ks_statistic(std::vector<double> samples, const std::function<double(double)>& cdf) {
    std::sort(samples.begin(), samples.end());
    const double n = static_cast<double>(samples.size());
    double d = 0;
    for (size_t idx = 0; idx < samples.size(); ++idx) {
        const double f = cdf(samples[idx]);
        d = std::max({d, f - static_cast<double>(idx) / n, static_cast<double>(idx + 1) / n - f});
    }
    return d;
}

// The KS critical value at significance 0.001 for n samples (asymptotic: 1.949 / sqrt(n)).
inline double ks_critical_001(size_t n) { return 1.949 / std::sqrt(static_cast<double>(n)); }

}  // namespace tern::testing
