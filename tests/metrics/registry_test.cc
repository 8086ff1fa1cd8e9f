// Registration errors: invalid names, duplicates, series-name collisions, bad histogram bounds.
#include "metrics/registry.h"

#include <cmath>

#include <gtest/gtest.h>

namespace tern::metrics {
namespace {

TEST(RegistryTest, AcceptsVllmStyleNames) {
    Registry registry;
    EXPECT_TRUE(registry.add_counter("tern:generation_tokens_total", "h").is_ok());
    EXPECT_TRUE(registry.add_gauge("_private:x9", "h", {"_a", "B1"}).is_ok());
}

TEST(RegistryTest, RejectsInvalidMetricNames) {
    Registry registry;
    for (const char* name : {"", "9lives", "has-dash", "has space", "é", "a.b", "a{b}"}) {
        Result<Family<Counter>*> result = registry.add_counter(name, "h");
        ASSERT_FALSE(result.is_ok()) << name;
        EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
        EXPECT_NE(result.status().message().find("invalid metric name"), std::string::npos);
    }
    EXPECT_EQ(registry.render(), "");
}

TEST(RegistryTest, RejectsInvalidLabelNames) {
    Registry registry;
    for (const char* label : {"", "1a", "a:b", "a-b", "__reserved"}) {
        EXPECT_FALSE(registry.add_gauge("g", "h", {label}).is_ok()) << label;
    }
    EXPECT_FALSE(registry.add_gauge("g", "h", {"a", "a"}).is_ok());
    EXPECT_FALSE(registry.add_histogram("h", "h", {1}, {"le"}).is_ok());
    EXPECT_TRUE(registry.add_gauge("le_is_fine_here", "h", {"le"}).is_ok());
    // The failed attempts reserved nothing.
    EXPECT_TRUE(registry.add_gauge("g", "h", {"a"}).is_ok());
    EXPECT_TRUE(registry.add_histogram("h", "h", {1}).is_ok());
}

TEST(RegistryTest, RejectsDuplicatesAndCollidingSeries) {
    Registry registry;
    ASSERT_TRUE(registry.add_counter("requests_total", "h").is_ok());
    Result<Family<Counter>*> again = registry.add_counter("requests_total", "h");
    ASSERT_FALSE(again.is_ok());
    EXPECT_NE(again.status().message().find("already registered"), std::string::npos);
    EXPECT_FALSE(registry.add_gauge("requests_total", "h").is_ok());  // another type, same name

    ASSERT_TRUE(registry.add_histogram("latency", "h", {1}).is_ok());
    EXPECT_FALSE(registry.add_counter("latency_count", "h").is_ok());
    EXPECT_FALSE(registry.add_gauge("latency_bucket", "h").is_ok());
    ASSERT_TRUE(registry.add_gauge("queue_sum", "h").is_ok());
    EXPECT_FALSE(registry.add_histogram("queue", "h", {1}).is_ok());
}

TEST(RegistryTest, RejectsBadHistogramBounds) {
    Registry registry;
    EXPECT_FALSE(registry.add_histogram("a", "h", {1, 1}).is_ok());
    EXPECT_FALSE(registry.add_histogram("b", "h", {2, 1}).is_ok());
    EXPECT_FALSE(registry.add_histogram("c", "h", {1, std::nan("")}).is_ok());
    EXPECT_FALSE(registry.add_histogram("d", "h", {1, INFINITY}).is_ok());
    EXPECT_FALSE(registry.add_histogram("e", "h", {-INFINITY, 1}).is_ok());
    EXPECT_TRUE(registry.add_histogram("f", "h", {-1, 0, 1e-9}).is_ok());
    EXPECT_TRUE(registry.add_histogram("a", "h", {}).is_ok());  // nothing was reserved by the failures
}

TEST(RegistryDeathTest, WrongNumberOfLabelValuesIsAProgrammingError) {
    Registry registry;
    Family<Counter>* family = registry.add_counter("c_total", "h", {"a", "b"}).value();
    EXPECT_DEATH(family->with_labels({"only one"}), "takes 2 label values");
    EXPECT_DEATH(family->get(), "takes 2 label values");
}

}  // namespace
}  // namespace tern::metrics
