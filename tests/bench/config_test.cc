#include "bench/config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "bench/progress.h"

namespace tern::bench {
namespace {

TEST(Config, ParsesRatesListsAndKeyValues) {
    EXPECT_TRUE(std::isinf(parse_rate("inf", "--request-rate").value()));
    EXPECT_DOUBLE_EQ(parse_rate("2.5", "--request-rate").value(), 2.5);
    for (const char* bad : {"0", "-1", "x", "2x", ""}) EXPECT_FALSE(parse_rate(bad, "--request-rate").is_ok()) << bad;
    EXPECT_EQ(parse_int_list("1, 2,4,8", "--sweep-concurrency").value(), (std::vector<int64_t>{1, 2, 4, 8}));
    EXPECT_FALSE(parse_int_list("1,0", "--sweep-concurrency").is_ok());
    EXPECT_FALSE(parse_int_list("", "--sweep-concurrency").is_ok());
    const std::vector<double> rates = parse_rate_list("0.5,inf", "--sweep-rate").value();
    EXPECT_DOUBLE_EQ(rates[0], 0.5);
    EXPECT_TRUE(std::isinf(rates[1]));
    EXPECT_EQ(parse_key_value("a=b=c", "--header").value(), std::make_pair(std::string("a"), std::string("b=c")));
    EXPECT_FALSE(parse_key_value("=b", "--header").is_ok());
    EXPECT_FALSE(parse_key_value("ab", "--header").is_ok());
}

TEST(Config, ValidateNamesTheFlagToChange) {
    BenchConfig config;
    EXPECT_TRUE(validate(config).is_ok());
    auto message = [](BenchConfig broken) { return validate(broken).message(); };
    BenchConfig bad = config;
    bad.num_prompts = 0;
    EXPECT_NE(message(bad).find("--num-prompts"), std::string::npos);
    bad = config;
    bad.sweep_concurrency = {1};
    bad.max_concurrency = 2;
    EXPECT_NE(message(bad).find("--max-concurrency"), std::string::npos);
    bad = config;
    bad.read_timeout_s = 0;
    EXPECT_NE(message(bad).find("timeouts"), std::string::npos);
    bad = config;
    bad.goodput = {"ttft"};
    EXPECT_NE(message(bad).find("--goodput"), std::string::npos);
    bad = config;
    bad.extra_body = "{not json";
    EXPECT_NE(message(bad).find("--extra-body"), std::string::npos);
}

TEST(Config, LengthDistributionsAreFittedIntoTheWorkload) {
    BenchConfig config;
    config.input_len_dist = "p50=800,p95=3000,p99=8000";
    std::vector<std::string> fits;
    ASSERT_TRUE(resolve_lengths(&config, &fits).is_ok());
    EXPECT_EQ(config.workload.input.kind, LengthSpec::Kind::kLogNormal);
    EXPECT_EQ(config.workload.output.kind, LengthSpec::Kind::kRange);
    ASSERT_EQ(fits.size(), 1u);
    EXPECT_NE(fits[0].find("p95 3000 ->"), std::string::npos) << fits[0];
    const nlohmann::json saved = to_json(config);
    EXPECT_EQ(saved["input_len_dist"], "p50=800,p95=3000,p99=8000");
    EXPECT_EQ(saved["request_rate"], "inf");
    config.output_len_dist = "p50=100";
    EXPECT_FALSE(resolve_lengths(&config, &fits).is_ok());
}

TEST(Progress, CountsDoneFailedAndTokens) {
    ProgressBar progress(10, "run", /*enabled=*/false);
    RequestRecord ok;
    ok.success = true;
    ok.output_tokens = 7;
    RequestRecord failed;
    for (int idx = 0; idx < 4; ++idx) progress.on_sent(idx);
    progress.on_done(ok);
    progress.on_done(ok);
    progress.on_done(failed);
    const std::string line = progress.line();
    EXPECT_NE(line.find("3/10 req"), std::string::npos) << line;
    EXPECT_NE(line.find("in flight 1"), std::string::npos) << line;
    EXPECT_NE(line.find("failed 1"), std::string::npos) << line;
    EXPECT_NE(line.find("[#######"), std::string::npos) << line;  // 3/10 of 24 cells
}

}  // namespace
}  // namespace tern::bench
