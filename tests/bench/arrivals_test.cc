#include "bench/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "bench/distribution_checks.h"

namespace tern::bench {
namespace {

using testing::gamma_cdf;
using testing::ks_critical_001;
using testing::ks_statistic;

std::vector<double> draw_gaps(ArrivalOptions options, size_t count, uint64_t seed) {
    GapSampler sampler(options, seed);
    std::vector<double> gaps(count);
    for (double& gap : gaps) gap = sampler.next_gap_s();
    return gaps;
}

TEST(GammaCdf, MatchesClosedFormsForShapesOneAndTwo) {
    for (double x : {0.01, 0.3, 1.0, 2.5, 7.0}) {
        EXPECT_NEAR(gamma_cdf(x, 1.0, 1.0), 1 - std::exp(-x), 1e-12) << x;
        EXPECT_NEAR(gamma_cdf(x, 2.0, 1.0), 1 - std::exp(-x) * (1 + x), 1e-12) << x;
        EXPECT_NEAR(gamma_cdf(x, 1.0, 0.5), 1 - std::exp(-2 * x), 1e-12) << x;
    }
}

// A Poisson process at rate R has exponential gaps with CDF 1 - exp(-R x).
TEST(Arrivals, PoissonGapsPassKolmogorovSmirnovAgainstTheRequestedRate) {
    constexpr size_t kCount = 5000;
    const std::vector<double> gaps = draw_gaps({.request_rate = 8.0, .burstiness = 1.0}, kCount, 42);
    const double d = ks_statistic(gaps, [](double x) { return 1 - std::exp(-8.0 * x); });
    EXPECT_LT(d, ks_critical_001(kCount));
    EXPECT_NEAR(std::accumulate(gaps.begin(), gaps.end(), 0.0) / kCount, 1 / 8.0, 0.01);
}

// The test has power: the same samples are rejected against a rate 10% off.
TEST(Arrivals, KolmogorovSmirnovRejectsAWrongRate) {
    constexpr size_t kCount = 5000;
    const std::vector<double> gaps = draw_gaps({.request_rate = 8.0, .burstiness = 1.0}, kCount, 42);
    const double d = ks_statistic(gaps, [](double x) { return 1 - std::exp(-8.8 * x); });
    EXPECT_GT(d, ks_critical_001(kCount));
}

// Burstiness K: Gamma(shape K, scale 1/(R K)), mean 1/R for every K, coefficient of variation 1/sqrt(K).
TEST(Arrivals, GammaGapsFollowTheRequestedShapeAndRate) {
    constexpr size_t kCount = 5000;
    for (double shape : {0.25, 0.5, 2.0, 4.0}) {
        const double rate = 5.0;
        const std::vector<double> gaps = draw_gaps({.request_rate = rate, .burstiness = shape}, kCount, 7);
        const double scale = 1 / (rate * shape);
        EXPECT_LT(ks_statistic(gaps, [&](double x) { return gamma_cdf(x, shape, scale); }), ks_critical_001(kCount))
            << "shape " << shape;
        const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / kCount;
        EXPECT_NEAR(mean, 1 / rate, 0.1 / rate) << "shape " << shape;
        // The wrong shape with the right mean is rejected, so the check sees the shape and not just the rate.
        const double wrong_shape = shape * 2;
        EXPECT_GT(ks_statistic(gaps, [&](double x) { return gamma_cdf(x, wrong_shape, 1 / (rate * wrong_shape)); }),
                  ks_critical_001(kCount))
            << "shape " << shape;
    }
}

TEST(Arrivals, InfiniteRateSendsAllAtOnceAndInfiniteBurstinessIsEvenlySpaced) {
    for (double gap : draw_gaps({}, 10, 1)) EXPECT_EQ(gap, 0.0);
    const double inf = std::numeric_limits<double>::infinity();
    for (double gap : draw_gaps({.request_rate = 4.0, .burstiness = inf}, 10, 1)) EXPECT_DOUBLE_EQ(gap, 0.25);
}

TEST(Arrivals, SameSeedSameGapsOtherSeedOtherGaps) {
    const ArrivalOptions options{.request_rate = 3.0, .burstiness = 0.7};
    EXPECT_EQ(draw_gaps(options, 50, 9), draw_gaps(options, 50, 9));
    EXPECT_NE(draw_gaps(options, 50, 9), draw_gaps(options, 50, 10));
}

TEST(Arrivals, ValidateRejectsNonPositiveRateAndBurstiness) {
    EXPECT_FALSE(validate(ArrivalOptions{.request_rate = 0, .burstiness = 1}).is_ok());
    EXPECT_FALSE(validate(ArrivalOptions{.request_rate = 1, .burstiness = 0}).is_ok());
    EXPECT_FALSE(validate(ArrivalOptions{.request_rate = -1, .burstiness = 1}).is_ok());
    EXPECT_TRUE(validate(ArrivalOptions{}).is_ok());
}

}  // namespace
}  // namespace tern::bench
