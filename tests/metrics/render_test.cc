// The exact text exposition output: families, labels, escaping, number formatting, histogram series.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "metrics/registry.h"
#include "metrics/text_format.h"

namespace tern::metrics {
namespace {

TEST(FormatValueTest, SpecialValuesIntegersAndFractions) {
    EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
    EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
    EXPECT_EQ(format_value(std::nan("")), "NaN");
    EXPECT_EQ(format_value(0.0), "0");
    EXPECT_EQ(format_value(-0.0), "0");
    EXPECT_EQ(format_value(42), "42");
    EXPECT_EQ(format_value(-3), "-3");
    EXPECT_EQ(format_value(1e15), "1000000000000000");
    EXPECT_EQ(format_value(9007199254740991.0), "9007199254740991");  // 2^53 - 1
    EXPECT_EQ(format_value(0.1), "0.1");
    EXPECT_EQ(format_value(2.5), "2.5");
    EXPECT_EQ(format_value(1.0 / 3.0), "0.3333333333333333");
    EXPECT_EQ(format_value(1e20), "1e+20");
    EXPECT_EQ(format_value(1.5e-7), "1.5e-07");
}

TEST(EscapeTest, LabelValuesAndHelp) {
    EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    EXPECT_EQ(escape_help("a\\b\"c\nd"), "a\\\\b\"c\\nd");  // HELP keeps quotes as they are
    EXPECT_EQ(escape_label_value("plain é"), "plain é");
}

TEST(RenderTest, CounterWithAndWithoutLabels) {
    Registry registry;
    Family<Counter>* prompt = registry.add_counter("tern:prompt_tokens_total", "Prefill tokens processed.").value();
    Family<Counter>* success =
        registry.add_counter("tern:request_success_total", "Finished requests.", {"finished_reason"}).value();
    prompt->get().inc(7);
    success->with_labels({"stop"}).inc();
    success->with_labels({"length"}).inc(2);
    success->with_labels({"stop"}).inc();
    EXPECT_EQ(registry.render(),
              "# HELP tern:prompt_tokens_total Prefill tokens processed.\n"
              "# TYPE tern:prompt_tokens_total counter\n"
              "tern:prompt_tokens_total 7\n"
              "# HELP tern:request_success_total Finished requests.\n"
              "# TYPE tern:request_success_total counter\n"
              "tern:request_success_total{finished_reason=\"length\"} 2\n"
              "tern:request_success_total{finished_reason=\"stop\"} 2\n");
}

TEST(RenderTest, GaugeSpecialValuesCallbacksAndEscaping) {
    Registry registry;
    Family<Gauge>* gauge = registry.add_gauge("g", "Help with \\ and \"quotes\"\nand a second line.", {"a", "b"})
                               .value();
    gauge->with_labels({"x", "quote\" backslash\\ newline\n"}).set(-2.5);
    gauge->with_labels({"inf", "1"}).set(std::numeric_limits<double>::infinity());
    gauge->with_labels({"inf", "2"}).set(-std::numeric_limits<double>::infinity());
    gauge->with_labels({"nan", ""}).set(std::nan(""));
    double resident_bytes = 1048576;
    gauge->set_callback({"cb", "bytes"}, [&] { return resident_bytes; });
    const std::string expected_head =
        "# HELP g Help with \\\\ and \"quotes\"\\nand a second line.\n"
        "# TYPE g gauge\n";
    EXPECT_EQ(registry.render(), expected_head +
                                     "g{a=\"cb\",b=\"bytes\"} 1048576\n"
                                     "g{a=\"inf\",b=\"1\"} +Inf\n"
                                     "g{a=\"inf\",b=\"2\"} -Inf\n"
                                     "g{a=\"nan\",b=\"\"} NaN\n"
                                     "g{a=\"x\",b=\"quote\\\" backslash\\\\ newline\\n\"} -2.5\n");
    resident_bytes = 0.5;  // read again at the next scrape
    EXPECT_NE(registry.render().find("g{a=\"cb\",b=\"bytes\"} 0.5\n"), std::string::npos);
    EXPECT_EQ(gauge->with_labels({"cb", "bytes"}).value(), 0.5);
}

TEST(RenderTest, HistogramBucketsSumAndCount) {
    Registry registry;
    Family<Histogram>* ttft = registry.add_histogram("tern:time_to_first_token_seconds", "Time to first token.",
                                                     {0.001, 0.5, 1, 2.5}, {"model"})
                                  .value();
    Histogram& tiny = ttft->with_labels({"tiny"});
    tiny.observe(0.5);  // equal to a bound: counted in le="0.5"
    tiny.observe(0.75);
    tiny.observe(4);
    EXPECT_EQ(registry.render(),
              "# HELP tern:time_to_first_token_seconds Time to first token.\n"
              "# TYPE tern:time_to_first_token_seconds histogram\n"
              "tern:time_to_first_token_seconds_bucket{model=\"tiny\",le=\"0.001\"} 0\n"
              "tern:time_to_first_token_seconds_bucket{model=\"tiny\",le=\"0.5\"} 1\n"
              "tern:time_to_first_token_seconds_bucket{model=\"tiny\",le=\"1\"} 2\n"
              "tern:time_to_first_token_seconds_bucket{model=\"tiny\",le=\"2.5\"} 2\n"
              "tern:time_to_first_token_seconds_bucket{model=\"tiny\",le=\"+Inf\"} 3\n"
              "tern:time_to_first_token_seconds_sum{model=\"tiny\"} 5.25\n"
              "tern:time_to_first_token_seconds_count{model=\"tiny\"} 3\n");
}

TEST(RenderTest, UnlabelledHistogramStartsAtZero) {
    Registry registry;
    ASSERT_TRUE(registry.add_histogram("h", "", {1}).is_ok());
    EXPECT_EQ(registry.render(),
              "# TYPE h histogram\n"
              "h_bucket{le=\"1\"} 0\n"
              "h_bucket{le=\"+Inf\"} 0\n"
              "h_sum 0\n"
              "h_count 0\n");
}

TEST(RenderTest, FamiliesSortedByNameAndUnusedLabelledFamilyHasNoSamples) {
    Registry registry;
    ASSERT_TRUE(registry.add_gauge("b_gauge", "B.").is_ok());
    ASSERT_TRUE(registry.add_counter("a_total", "A.", {"kind"}).is_ok());
    EXPECT_EQ(registry.render(),
              "# HELP a_total A.\n"
              "# TYPE a_total counter\n"
              "# HELP b_gauge B.\n"
              "# TYPE b_gauge gauge\n"
              "b_gauge 0\n");
    EXPECT_EQ(Registry().render(), "");
}

}  // namespace
}  // namespace tern::metrics
