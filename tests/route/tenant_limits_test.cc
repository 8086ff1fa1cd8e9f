// Tenants' budgets on a simulated clock: the admitted rate matches the budget, Retry-After says when the next one
// fits, concurrency is capped, and tokens are charged as used.
#include "route/tenant_limits.h"

#include <gtest/gtest.h>

namespace tern::route {
namespace {

using std::chrono::milliseconds;

TEST(RouteTokenBucket, AdmitsItsRateOverAWindowWithinOneSecondsWorth) {
    const Clock::time_point start{};
    TokenBucket bucket(600);  // 10 a second
    int admitted = 0;
    // 100 attempts a second for 60 seconds: ten times the budget.
    for (int tick = 0; tick < 6000; ++tick) {
        if (!bucket.try_take(1, start + milliseconds(tick * 10))) ++admitted;
    }
    EXPECT_GE(admitted, 600);
    EXPECT_LE(admitted, 610);  // the budget plus the bucket's one second
}

TEST(RouteTokenBucket, RetryAfterIsWhenTheNextOneFits) {
    const Clock::time_point start{};
    TokenBucket bucket(60);  // one a second, a bucket of one
    EXPECT_FALSE(bucket.try_take(1, start).has_value());
    const std::optional<double> wait = bucket.try_take(1, start + milliseconds(250));
    ASSERT_TRUE(wait.has_value());
    EXPECT_NEAR(*wait, 0.75, 1e-9);
    EXPECT_TRUE(bucket.try_take(1, start + milliseconds(990)).has_value());
    EXPECT_FALSE(bucket.try_take(1, start + milliseconds(1000)).has_value());
}

TEST(RouteTokenBucket, ARequestLargerThanTheBucketIsAdmittedWhenFullAndLeavesDebt) {
    const Clock::time_point start{};
    TokenBucket bucket(600);  // 10 tokens a second, a bucket of 10
    EXPECT_FALSE(bucket.try_take(50, start).has_value());
    EXPECT_NEAR(bucket.level(start), -40, 1e-9);
    const std::optional<double> wait = bucket.try_take(1, start);
    ASSERT_TRUE(wait.has_value());
    EXPECT_NEAR(*wait, 4.1, 1e-9);  // paying back 40, then one more
}

TEST(RouteTenantLimits, ConcurrencyIsCappedAndFreedWhenRequestsEnd) {
    const std::vector<TenantConfig> tenants = {TenantConfig{.name = "t", .max_concurrency = 2}};
    TenantLimits limits(tenants);
    const Clock::time_point now{};
    const Admission first = limits.admit(0, 10, now);
    const Admission second = limits.admit(0, 10, now);
    ASSERT_TRUE(first.admitted && second.admitted);
    const Admission third = limits.admit(0, 10, now);
    EXPECT_FALSE(third.admitted);
    EXPECT_EQ(third.status, 429);
    EXPECT_NE(third.message.find("in flight"), std::string::npos);
    limits.finish(0, first, -1, now);
    EXPECT_TRUE(limits.admit(0, 10, now).admitted);
}

TEST(RouteTenantLimits, TokensAreReservedThenChargedAsUsed) {
    const std::vector<TenantConfig> tenants = {TenantConfig{.name = "t", .tokens_per_minute = 6000}};  // 100 a second
    TenantLimits limits(tenants);
    const Clock::time_point now{};
    const Admission big = limits.admit(0, 100, now);  // reserves the whole bucket
    ASSERT_TRUE(big.admitted);
    EXPECT_FALSE(limits.admit(0, 10, now).admitted);
    limits.finish(0, big, 20, now);  // used 20: 80 come back
    EXPECT_TRUE(limits.admit(0, 50, now).admitted);
    EXPECT_TRUE(limits.admit(0, 30, now).admitted);
    EXPECT_FALSE(limits.admit(0, 10, now).admitted);
}

TEST(RouteTenantLimits, ARequestRefusedForTokensDoesNotUseARequestSlot) {
    // A bucket of one request, and one of 10 tokens.
    const std::vector<TenantConfig> tenants = {
        TenantConfig{.name = "t", .requests_per_minute = 60, .tokens_per_minute = 600}};
    TenantLimits limits(tenants);
    const Clock::time_point now{};
    const Admission taken = limits.admit(0, 10, now);
    ASSERT_TRUE(taken.admitted);
    const Clock::time_point later = now + std::chrono::seconds(1);  // one request back, 10 tokens back
    limits.finish(0, taken, -1, now);
    // 20 tokens exceed the bucket of 10: admitted since the bucket is full, leaving a debt of 10.
    EXPECT_TRUE(limits.admit(0, 20, later).admitted);
    const Admission next = limits.admit(0, 1, later + std::chrono::seconds(1));
    EXPECT_FALSE(next.admitted);
    EXPECT_NE(next.message.find("tokens per minute"), std::string::npos) << next.message;
    // ... and its request slot went back: once the tokens refill, a request is admitted at once.
    EXPECT_TRUE(limits.admit(0, 1, later + std::chrono::seconds(3)).admitted);
}

}  // namespace
}  // namespace tern::route
