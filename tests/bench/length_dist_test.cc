#include "bench/length_dist.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "bench/stats.h"

namespace tern::bench {
namespace {

TEST(LengthDist, InverseNormalMatchesKnownQuantiles) {
    EXPECT_NEAR(inverse_normal_cdf(0.5), 0.0, 1e-12);
    EXPECT_NEAR(inverse_normal_cdf(0.975), 1.959963984540054, 1e-9);
    EXPECT_NEAR(inverse_normal_cdf(0.99), 2.326347874040841, 1e-9);
    EXPECT_NEAR(inverse_normal_cdf(0.01), -2.326347874040841, 1e-9);
    EXPECT_NEAR(inverse_normal_cdf(1e-6), -4.753424308822899, 1e-8);
}

TEST(LengthDist, ParsesPercentileSpecs) {
    Result<std::vector<PercentilePoint>> points = parse_percentile_spec("p95=3000, p50=800,p99=8000");
    ASSERT_TRUE(points.is_ok()) << points.status().message();
    ASSERT_EQ(points.value().size(), 3u);
    EXPECT_EQ(points.value()[0].percentile, 50);
    EXPECT_EQ(points.value()[0].value, 800);
    EXPECT_EQ(points.value()[2].percentile, 99);
    EXPECT_TRUE(parse_percentile_spec("50=10,90=20").is_ok());
    for (const char* bad : {"", "p50", "p50=x", "p0=5,p50=6", "p100=5", "p50=-1", "p50=5,p50=6"}) {
        EXPECT_FALSE(parse_percentile_spec(bad).is_ok()) << bad;
    }
}

TEST(LengthDist, TwoPercentilesFitExactly) {
    const std::vector<PercentilePoint> points = {{50, 800}, {95, 3000}};
    Result<LogNormal> fit = fit_lognormal(points);
    ASSERT_TRUE(fit.is_ok());
    EXPECT_NEAR(fit.value().quantile(50), 800, 1e-6);
    EXPECT_NEAR(fit.value().quantile(95), 3000, 1e-6);
    EXPECT_NEAR(fit.value().mu, std::log(800.0), 1e-9);
}

TEST(LengthDist, FitNeedsTwoIncreasingPoints) {
    EXPECT_FALSE(fit_lognormal(std::vector<PercentilePoint>{{50, 800}}).is_ok());
    EXPECT_FALSE(fit_lognormal(std::vector<PercentilePoint>{{50, 800}, {95, 700}}).is_ok());
}

// Three percentiles are fitted by least squares; sampling the fit reproduces them within a few percent when they
// come from a real log-normal.
TEST(LengthDist, SampledLengthsReproduceTheRequestedPercentiles) {
    const LogNormal truth{std::log(800.0), 0.8};
    std::vector<PercentilePoint> points;
    for (double p : {50.0, 90.0, 99.0}) points.push_back({p, truth.quantile(p)});
    Result<LogNormal> fit = fit_lognormal(points);
    ASSERT_TRUE(fit.is_ok());
    EXPECT_NEAR(fit.value().mu, truth.mu, 1e-9);
    EXPECT_NEAR(fit.value().sigma, truth.sigma, 1e-9);
    LengthSpec spec = LengthSpec::fitted(fit.value());
    std::mt19937_64 rng(3);
    std::vector<double> samples;
    for (int idx = 0; idx < 40000; ++idx) samples.push_back(static_cast<double>(sample_length(spec, rng)));
    std::sort(samples.begin(), samples.end());
    for (const PercentilePoint& point : points) {
        EXPECT_NEAR(percentile_of_sorted(samples, point.percentile), point.value, point.value * 0.05)
            << "p" << point.percentile;
    }
}

TEST(LengthDist, RangeRatioDrawsUniformlyWithinVllmBounds) {
    const LengthSpec spec = LengthSpec::fixed(100, 0.5);
    std::mt19937_64 rng(1);
    int64_t lo = 1000;
    int64_t hi = 0;
    for (int idx = 0; idx < 5000; ++idx) {
        const int64_t length = sample_length(spec, rng);
        lo = std::min(lo, length);
        hi = std::max(hi, length);
    }
    EXPECT_EQ(lo, 50);
    EXPECT_EQ(hi, 150);
    EXPECT_EQ(sample_length(LengthSpec::fixed(64), rng), 64);
    EXPECT_FALSE(validate(LengthSpec::fixed(10, 1.0), "--input-len").is_ok());
    EXPECT_FALSE(validate(LengthSpec::fixed(-1), "--input-len").is_ok());
}

}  // namespace
}  // namespace tern::bench
