// deploy/prometheus/tern-alerts.yml: Prometheus's own checker and its rule unit tests pass (promtool, from
// Debian's `prometheus` package; skipped where it is not installed), and every metric the rules read is one that
// `tern serve` exports, so renaming a metric cannot silence an alert unnoticed.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "server/server_metrics.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

std::string find_program(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path != nullptr ? path : "/usr/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        if (!dir.empty() && fs::exists(fs::path(dir) / name)) return (fs::path(dir) / name).string();
    }
    return "";
}

// Runs `command` in deploy/prometheus; its exit code, with its output appended to `output`.
int run_in_rules_dir(const std::string& command, std::string* output) {
    const fs::path log = fs::path(::testing::TempDir()) / ("promtool_" + std::to_string(::getpid()) + ".log");
    const std::string line = "cd '" + std::string(TERN_DEPLOY_DIR) + "/prometheus' && " + command + " > '" +
                             log.string() + "' 2>&1";
    const int status = std::system(line.c_str());
    std::ifstream stream(log);
    *output += std::string(std::istreambuf_iterator<char>(stream), {});
    fs::remove(log);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(AlertRules, PromtoolChecksThemAndTheirUnitTestsPass) {
    const std::string promtool = find_program("promtool");
    if (promtool.empty()) GTEST_SKIP() << "promtool not found (Debian package prometheus)";
    std::string output;
    EXPECT_EQ(run_in_rules_dir(promtool + " check rules tern-alerts.yml", &output), 0) << output;
    EXPECT_EQ(run_in_rules_dir(promtool + " test rules tern-alerts.test.yml", &output), 0) << output;
}

TEST(AlertRules, EveryMetricTheyReadIsOneTernServeExports) {
    std::ifstream stream(std::string(TERN_DEPLOY_DIR) + "/prometheus/tern-alerts.yml");
    const std::string rules((std::istreambuf_iterator<char>(stream)), {});
    ASSERT_FALSE(rules.empty());
    auto metrics = server::ServerMetrics::create(1, 1);
    ASSERT_TRUE(metrics.is_ok()) << metrics.status().message();
    const std::string exported = metrics.value()->render();
    const std::regex name("tern:[a-z_]+");
    std::set<std::string> used;
    for (auto it = std::sregex_iterator(rules.begin(), rules.end(), name); it != std::sregex_iterator(); ++it) {
        std::string metric = it->str();
        for (const char* suffix : {"_bucket", "_count", "_sum"}) {  // a histogram's series
            const size_t length = std::strlen(suffix);
            if (metric.size() > length && metric.ends_with(suffix)) metric.resize(metric.size() - length);
        }
        used.insert(metric);
    }
    EXPECT_GE(used.size(), 4u);
    for (const std::string& metric : used) {
        EXPECT_NE(exported.find("# TYPE " + metric + " "), std::string::npos) << metric << " is not exported";
    }
}

}  // namespace
}  // namespace tern
