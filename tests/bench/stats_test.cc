#include "bench/stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tern::bench {
namespace {

// Expected values are numpy.percentile's (linear interpolation), e.g. np.percentile([1, 2, 3, 4], 90) == 3.7.
TEST(Stats, PercentilesInterpolateLikeNumpy) {
    const std::vector<double> sorted = {1, 2, 3, 4};
    EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 0), 1);
    EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 50), 2.5);
    EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 90), 3.7);
    EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 99), 3.97);
    EXPECT_DOUBLE_EQ(percentile_of_sorted(sorted, 100), 4);
    EXPECT_DOUBLE_EQ(percentile_of_sorted(std::vector<double>{7}, 99), 7);
    EXPECT_DOUBLE_EQ(percentile_of_sorted(std::vector<double>{}, 50), 0);
}

TEST(Stats, DescribeSortsAndComputesPopulationStd) {
    const Distribution d = describe({9, 1, 5, 3, 7});
    EXPECT_EQ(d.count, 5u);
    EXPECT_DOUBLE_EQ(d.mean, 5);
    EXPECT_DOUBLE_EQ(d.median, 5);
    EXPECT_DOUBLE_EQ(d.std, std::sqrt(8.0));  // squares 16+4+0+4+16 = 40, / 5
    EXPECT_DOUBLE_EQ(d.min, 1);
    EXPECT_DOUBLE_EQ(d.max, 9);
    EXPECT_DOUBLE_EQ(d.p90, 8.2);
    EXPECT_DOUBLE_EQ(d.p99, 8.92);
    const Distribution empty = describe({});
    EXPECT_EQ(empty.count, 0u);
    EXPECT_EQ(empty.mean, 0);
}

// Welch's t for a = {1,2,3,4,5} (mean 3, var 2.5) and b = {2,4,6,8,10} (mean 6, var 10): t = 3 / sqrt(0.5 + 2) and
// df = 2.5^2 / (0.5^2/4 + 2^2/4) = 5.882...
TEST(Stats, WelchMatchesHandComputation) {
    const std::vector<double> a = {1, 2, 3, 4, 5};
    const std::vector<double> b = {2, 4, 6, 8, 10};
    const WelchResult result = welch_t(a, b);
    EXPECT_NEAR(result.t, 3 / std::sqrt(2.5), 1e-12);
    EXPECT_NEAR(result.degrees_of_freedom, 6.25 / (0.0625 + 1.0), 1e-12);
    EXPECT_EQ(welch_t(std::vector<double>{1}, b).t, 0);
}

// Reference p-values from the t distribution tables (scipy.stats.t.sf(t, df) * 2).
TEST(Stats, StudentTwoSidedPValues) {
    EXPECT_NEAR(student_t_two_sided_p(0, 10), 1.0, 1e-12);
    EXPECT_NEAR(student_t_two_sided_p(2.0, 10), 0.073388, 1e-5);
    EXPECT_NEAR(student_t_two_sided_p(-2.0, 10), 0.073388, 1e-5);
    EXPECT_NEAR(student_t_two_sided_p(2.228139, 10), 0.05, 1e-5);
    EXPECT_NEAR(student_t_two_sided_p(1.959964, 1e6), 0.05, 1e-4);
    EXPECT_LT(student_t_two_sided_p(10, 30), 1e-9);
}

}  // namespace
}  // namespace tern::bench
