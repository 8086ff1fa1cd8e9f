// Parse-back: render() output goes through Prometheus's own parser and linter (`promtool check metrics`, from
// Debian's `prometheus` package). Skipped where promtool is not installed.
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "metrics/registry.h"

namespace tern::metrics {
namespace {

namespace fs = std::filesystem;

std::string find_promtool() {
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path != nullptr ? path : "/usr/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        fs::path candidate = fs::path(dir) / "promtool";
        if (!dir.empty() && fs::exists(candidate)) return candidate.string();
    }
    return "";
}

struct PromtoolResult {
    int exit_code = -1;
    std::string output;
};

// Runs `promtool check metrics --extended` on `exposition`: exit 0 clean, 3 lint findings only, 1 parse error.
PromtoolResult check_metrics(const std::string& promtool, const std::string& exposition, const std::string& tag) {
    fs::create_directories(TERN_TEST_TMP);
    const fs::path input = fs::path(TERN_TEST_TMP) / ("metrics_" + tag + ".prom");
    const fs::path output = fs::path(TERN_TEST_TMP) / ("metrics_" + tag + ".out");
    std::ofstream(input, std::ios::binary) << exposition;
    const std::string command =
        promtool + " check metrics --extended < '" + input.string() + "' > '" + output.string() + "' 2>&1";
    int status = std::system(command.c_str());
    PromtoolResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(output);
    result.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return result;
}

class PromtoolTest : public testing::Test {
protected:
    void SetUp() override {
        promtool_ = find_promtool();
        if (promtool_.empty()) GTEST_SKIP() << "promtool not found (Debian package prometheus)";
    }
    std::string promtool_;
};

TEST_F(PromtoolTest, HarnessDetectsAParseError) {
    PromtoolResult result = check_metrics(promtool_, "x{a=\"unterminated} 1\n", "broken");
    EXPECT_EQ(result.exit_code, 1) << result.output;
}

// Lint-clean names, every value kind, escaping in HELP and label values: promtool parses all of it, finds nothing
// to complain about, and counts the series we wrote.
TEST_F(PromtoolTest, RenderedOutputParsesAndLintsClean) {
    Registry registry;
    Family<Counter>* requests =
        registry.add_counter("tern_requests_total", "Requests, \"quoted\" \\ and\nmultiline.", {"reason"}).value();
    requests->with_labels({"stop"}).inc(3);
    requests->with_labels({"odd \"value\" \\ with\nnewline"}).inc(0.25);
    Family<Gauge>* gauge = registry.add_gauge("tern_kv_cache_usage_ratio", "KV usage.", {"pool"}).value();
    gauge->with_labels({"nan"}).set(std::nan(""));
    gauge->with_labels({"inf"}).set(INFINITY);
    gauge->with_labels({"neg"}).set(-1e300);
    gauge->set_callback({"cb"}, [] { return 0.75; });
    Family<Histogram>* latency =
        registry.add_histogram("tern_latency_seconds", "Latency.", {0.001, 0.01, 0.1, 1, 10}, {"phase"}).value();
    for (double value : {0.0005, 0.01, 0.3, 42.0}) latency->with_labels({"prefill"}).observe(value);
    latency->with_labels({"decode"}).observe(0.02);

    PromtoolResult result = check_metrics(promtool_, registry.render(), "clean");
    EXPECT_EQ(result.exit_code, 0) << result.output;
    // 2 counter series + 4 gauge series + 2 histograms x (6 buckets + sum + count).
    EXPECT_NE(result.output.find("Total"), std::string::npos) << result.output;
    std::istringstream lines(result.output);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::string first;
        int cardinality = 0;
        if (words >> first >> cardinality && first == "Total") {
            EXPECT_EQ(cardinality, 2 + 4 + 2 * 8) << line;
        }
    }
}

// tern's vLLM-style names parse; promtool's only complaint is the colon, which vLLM's names share.
TEST_F(PromtoolTest, VllmStyleNamesParseWithOnlyColonLint) {
    Registry registry;
    registry.add_counter("tern:request_success_total", "Finished.", {"finished_reason"})
        .value()
        ->with_labels({"stop"})
        .inc();
    registry.add_histogram("tern:e2e_request_latency_seconds", "E2E.", {0.3, 0.5, 1}).value()->get().observe(0.4);
    registry.add_gauge("tern:num_requests_running", "Running.").value()->get().set(2);

    PromtoolResult result = check_metrics(promtool_, registry.render(), "vllm");
    ASSERT_EQ(result.exit_code, 3) << result.output;  // lint findings, no parse error
    std::istringstream lines(result.output);
    int num_colon_findings = 0;
    for (std::string line; std::getline(lines, line);) {
        if (line.find("should not contain ':'") != std::string::npos) ++num_colon_findings;
    }
    EXPECT_EQ(num_colon_findings, 3) << result.output;
}

}  // namespace
}  // namespace tern::metrics
