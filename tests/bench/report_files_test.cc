// The files a run leaves: the result JSON, the ledger CSV, and the comparison of two results.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/compare.h"
#include "bench/ledger.h"
#include "bench/report.h"
#include "bench/result.h"

namespace tern::bench {
namespace {

std::string temp_path(const std::string& name) {
    std::filesystem::create_directories(TERN_TEST_TMP);
    const std::string path = std::string(TERN_TEST_TMP) + "/" + name;
    std::filesystem::remove(path);
    return path;
}

std::string read_all(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

// A run whose requests have TTFT around `ttft_s` (with spread) and ITL 10 ms.
RunPoint make_run(double ttft_s, int num_requests, int64_t max_concurrency) {
    RunPoint run;
    run.request_rate = std::numeric_limits<double>::infinity();
    run.max_concurrency = max_concurrency;
    for (int idx = 0; idx < num_requests; ++idx) {
        RequestRecord record;
        record.index = idx;
        record.success = idx != 3;
        record.error_kind = record.success ? ErrorKind::kNone : ErrorKind::kHttpStatus;
        record.error = record.success ? "" : "HTTP 503 from /v1/completions: overloaded";
        record.start_s = 0.01 * idx;
        record.ttft_s = record.success ? ttft_s * (0.9 + 0.2 * (idx % 5) / 4.0) : 0;
        record.itl_s = record.success ? std::vector<double>(4, 0.01) : std::vector<double>();
        record.e2el_s = record.ttft_s + 0.04;
        record.output_tokens = record.success ? 5 : 0;
        record.input_tokens = 32;
        run.load.records.push_back(record);
    }
    run.load.duration_s = 1.0;
    run.summary = summarize(run.load.records, 1.0, GoodputSlo{}, 0.01);
    return run;
}

TEST(ResultFile, SavesVllmKeysAndEveryRequestAndLoadsBack) {
    BenchResult result;
    result.label = "unit";
    result.git_commit = "abc";
    result.config = {{"model", "m"}};
    result.runs = {make_run(0.1, 20, 4)};
    const std::string path = temp_path("result.json");
    ASSERT_TRUE(save_result(result, path).is_ok());
    const nlohmann::json saved = nlohmann::json::parse(read_all(path));
    EXPECT_EQ(saved["git_commit"], "abc");
    const nlohmann::json& run = saved["runs"][0];
    for (const char* key : {"completed", "failed", "request_throughput", "output_throughput", "mean_ttft_ms",
                            "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "mean_itl_ms", "p99_e2el_ms", "ttfts",
                            "itls", "latencies", "input_lens", "output_lens", "errors", "start_times"}) {
        EXPECT_TRUE(run.contains(key)) << key;
    }
    EXPECT_EQ(run["completed"], 19);
    EXPECT_EQ(run["ttfts"].size(), 20u);
    EXPECT_EQ(run["itls"][0].size(), 4u);
    EXPECT_EQ(run["errors_by_kind"]["http_status"], 1);
    EXPECT_EQ(run["max_concurrency"], 4);
    EXPECT_EQ(run["request_rate"], "inf");
    Result<std::vector<nlohmann::json>> runs = load_runs(path);
    ASSERT_TRUE(runs.is_ok());
    EXPECT_EQ(runs.value().size(), 1u);
    EXPECT_FALSE(load_runs(temp_path("missing.json")).is_ok());
}

TEST(Compare, SameResultIsAllNoiseAndSlowerTtftIsWorse) {
    const std::vector<nlohmann::json> a = {run_to_json(make_run(0.1, 40, 0))};
    const std::vector<nlohmann::json> slower = {run_to_json(make_run(0.2, 40, 0))};
    const CompareOptions options;
    Result<std::vector<RunComparison>> same = compare_runs(a, a, options);
    ASSERT_TRUE(same.is_ok());
    EXPECT_FALSE(has_regression(same.value()));
    for (const FigureChange& change : same.value()[0].changes) EXPECT_EQ(change.verdict, Verdict::kNoise);

    Result<std::vector<RunComparison>> worse = compare_runs(a, slower, options);
    ASSERT_TRUE(worse.is_ok());
    EXPECT_TRUE(has_regression(worse.value()));
    bool saw_ttft = false;
    for (const FigureChange& change : worse.value()[0].changes) {
        if (change.figure != "mean_ttft_ms") continue;
        saw_ttft = true;
        EXPECT_EQ(change.verdict, Verdict::kWorse);
        EXPECT_NEAR(change.change_pct, 100, 1e-6);
        ASSERT_TRUE(change.p_value.has_value());
        EXPECT_LT(*change.p_value, 1e-6);
    }
    EXPECT_TRUE(saw_ttft);
    Result<std::vector<RunComparison>> better = compare_runs(slower, a, options);
    EXPECT_FALSE(has_regression(better.value()));
    const std::string table = format_comparison(worse.value(), options);
    EXPECT_NE(table.find("| mean_ttft_ms |"), std::string::npos);
    EXPECT_NE(table.find("worse"), std::string::npos);
    EXPECT_FALSE(compare_runs(a, {}, options).is_ok());
}

// A 3% change is below the default 5% threshold even when it is statistically clear.
TEST(Compare, SmallChangesStayWithinTheThreshold) {
    const std::vector<nlohmann::json> a = {run_to_json(make_run(0.100, 40, 0))};
    const std::vector<nlohmann::json> b = {run_to_json(make_run(0.103, 40, 0))};
    Result<std::vector<RunComparison>> result = compare_runs(a, b, CompareOptions{});
    ASSERT_TRUE(result.is_ok());
    EXPECT_FALSE(has_regression(result.value()));
    CompareOptions strict;
    strict.threshold_pct = 1;
    EXPECT_TRUE(has_regression(compare_runs(a, b, strict).value()));
}

TEST(Ledger, WritesTheHeaderOnceAndQuotesFields) {
    const std::string path = temp_path("ledger.csv");
    const LedgerRow row = {{"label", "a,b"}, {"note", "say \"hi\""}, {"value", "1.5"}};
    ASSERT_TRUE(append_ledger_rows(path, {row}).is_ok());
    ASSERT_TRUE(append_ledger_rows(path, {row, row}).is_ok());
    EXPECT_EQ(read_all(path), "label,note,value\n"
                              "\"a,b\",\"say \"\"hi\"\"\",1.5\n"
                              "\"a,b\",\"say \"\"hi\"\"\",1.5\n"
                              "\"a,b\",\"say \"\"hi\"\"\",1.5\n");
    const LedgerRow other = {{"label", "x"}};
    EXPECT_FALSE(append_ledger_rows(path, {other}).is_ok());
}

TEST(Report, MarkdownTablesCarryTheFigures) {
    const RunPoint run = make_run(0.1, 20, 4);
    const std::string report = format_run_report(run, "Serving benchmark result");
    EXPECT_NE(report.find("| Successful requests | 19 |"), std::string::npos) << report;
    EXPECT_NE(report.find("| Failed requests | 1 |"), std::string::npos);
    EXPECT_NE(report.find("| Maximum request concurrency | 4 |"), std::string::npos);
    EXPECT_NE(report.find("| TTFT |"), std::string::npos);
    EXPECT_NE(report.find("| http_status | 1 |"), std::string::npos);
    EXPECT_NE(report.find("overloaded"), std::string::npos);
    const std::string sweep = format_sweep_table({make_run(0.1, 10, 1), make_run(0.2, 10, 2)});
    EXPECT_NE(sweep.find("| concurrency 1 |"), std::string::npos);
    EXPECT_NE(sweep.find("| concurrency 2 |"), std::string::npos);
}

}  // namespace
}  // namespace tern::bench
