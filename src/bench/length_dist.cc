#include "bench/length_dist.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/text.h"

namespace tern::bench {
namespace {

Result<double> parse_number(std::string_view text, std::string_view spec) {
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
        return invalid_argument(fmt::format("'{}': '{}' is not a number", spec, text));
    }
    return value;
}

Result<PercentilePoint> parse_point(std::string_view item, std::string_view spec) {
    const size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
        return invalid_argument(fmt::format("'{}': expected items like p50=800, got '{}'", spec, item));
    }
    std::string_view key = trim_space(item.substr(0, equals));
    if (!key.empty() && (key.front() == 'p' || key.front() == 'P')) key.remove_prefix(1);
    PercentilePoint point;
    TERN_ASSIGN_OR_RETURN(point.percentile, parse_number(key, spec));
    TERN_ASSIGN_OR_RETURN(point.value, parse_number(trim_space(item.substr(equals + 1)), spec));
    if (!(point.percentile > 0 && point.percentile < 100)) {
        return invalid_argument(fmt::format("'{}': percentiles must be in (0, 100), got {}", spec, point.percentile));
    }
    if (!(point.value > 0)) return invalid_argument(fmt::format("'{}': lengths must be > 0", spec));
    return point;
}

}  // namespace

Result<std::vector<PercentilePoint>> parse_percentile_spec(std::string_view spec) {
    std::vector<PercentilePoint> points;
    size_t start = 0;
    while (start <= spec.size()) {
        const size_t comma = std::min(spec.find(',', start), spec.size());
        const std::string_view item = trim_space(spec.substr(start, comma - start));
        if (!item.empty()) {
            TERN_ASSIGN_OR_RETURN(PercentilePoint point, parse_point(item, spec));
            points.push_back(point);
        }
        start = comma + 1;
    }
    if (points.empty()) return invalid_argument(fmt::format("'{}': no percentiles given", spec));
    std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.percentile < b.percentile; });
    for (size_t idx = 1; idx < points.size(); ++idx) {
        if (points[idx].percentile == points[idx - 1].percentile) {
            return invalid_argument(fmt::format("'{}': percentile {} is given twice", spec, points[idx].percentile));
        }
    }
    return points;
}

// Acklam's rational approximation (relative error 1.15e-9), refined by one Halley step on erfc.
double inverse_normal_cdf(double probability) {
    static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                   1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
    static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                   6.680131188771972e+01,  -1.328068155288572e+01};
    static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                   -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
    static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                   3.754408661907416e+00};
    if (probability <= 0) return -INFINITY;
    if (probability >= 1) return INFINITY;
    constexpr double kLow = 0.02425;
    double x = 0;
    if (probability < kLow) {
        const double q = std::sqrt(-2 * std::log(probability));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    } else if (probability <= 1 - kLow) {
        const double q = probability - 0.5;
        const double r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
    } else {
        const double q = std::sqrt(-2 * std::log(1 - probability));
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    const double error = 0.5 * std::erfc(-x / std::sqrt(2.0)) - probability;
    const double u = error * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
    return x - u / (1 + x * u / 2);
}

double LogNormal::quantile(double percentile) const {
    return std::exp(mu + sigma * inverse_normal_cdf(percentile / 100.0));
}

Result<LogNormal> fit_lognormal(std::span<const PercentilePoint> points) {
    if (points.size() < 2) {
        return invalid_argument("a length distribution needs at least two percentiles (e.g. p50=800,p95=3000)");
    }
    double mean_z = 0;
    double mean_y = 0;
    for (const PercentilePoint& point : points) {
        mean_z += inverse_normal_cdf(point.percentile / 100.0);
        mean_y += std::log(point.value);
    }
    mean_z /= static_cast<double>(points.size());
    mean_y /= static_cast<double>(points.size());
    double covariance = 0;
    double variance = 0;
    for (const PercentilePoint& point : points) {
        const double dz = inverse_normal_cdf(point.percentile / 100.0) - mean_z;
        covariance += dz * (std::log(point.value) - mean_y);
        variance += dz * dz;
    }
    const double sigma = covariance / variance;
    if (!(sigma > 0)) {
        return invalid_argument("the percentile lengths must grow with the percentile to fit a log-normal");
    }
    return LogNormal{mean_y - sigma * mean_z, sigma};
}

LengthSpec LengthSpec::fixed(int64_t length, double range_ratio) {
    LengthSpec spec;
    spec.kind = Kind::kRange;
    spec.length = length;
    spec.range_ratio = range_ratio;
    spec.min_length = 0;
    return spec;
}

LengthSpec LengthSpec::fitted(LogNormal lognormal) {
    LengthSpec spec;
    spec.kind = Kind::kLogNormal;
    spec.lognormal = lognormal;
    return spec;
}

Status validate(const LengthSpec& spec, std::string_view what) {
    if (spec.kind == LengthSpec::Kind::kRange) {
        if (spec.length < 0) return invalid_argument(fmt::format("{} must be >= 0, got {}", what, spec.length));
        if (!(spec.range_ratio >= 0 && spec.range_ratio < 1)) {
            return invalid_argument(fmt::format("--range-ratio must be in [0, 1), got {}", spec.range_ratio));
        }
    }
    if (spec.min_length < 0 || spec.min_length > spec.max_length) {
        return invalid_argument(fmt::format("{}: the length bounds [{}, {}] are empty", what, spec.min_length,
                                            spec.max_length));
    }
    return Status::ok();
}

int64_t sample_length(const LengthSpec& spec, std::mt19937_64& rng) {
    int64_t length = 0;
    if (spec.kind == LengthSpec::Kind::kRange) {
        // vLLM's bounds: int(L * (1 - r)) and int(L * (1 + r)), both inclusive.
        const auto low = static_cast<int64_t>(static_cast<double>(spec.length) * (1 - spec.range_ratio));
        const auto high = static_cast<int64_t>(static_cast<double>(spec.length) * (1 + spec.range_ratio));
        length = low >= high ? low : std::uniform_int_distribution<int64_t>(low, high)(rng);
    } else {
        std::lognormal_distribution<double> lognormal(spec.lognormal.mu, spec.lognormal.sigma);
        length = static_cast<int64_t>(std::llround(std::min(lognormal(rng), 1e12)));
    }
    return std::clamp(length, spec.min_length, spec.max_length);
}

}  // namespace tern::bench
