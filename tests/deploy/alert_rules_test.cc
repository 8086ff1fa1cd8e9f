// deploy/prometheus/tern-alerts.yml: Prometheus's own checker and its rule unit tests pass (promtool, from
// Debian's `prometheus` package; skipped where it is not installed), and every metric the rules read is one that
// `tern serve` exports, so renaming a metric cannot silence an alert unnoticed.
#include <gtest/gtest.h>

#include "deploy_helpers.h"

namespace tern {
namespace {

TEST(AlertRules, PromtoolChecksThemAndTheirUnitTestsPass) {
    if (!testing::have_tool("promtool")) GTEST_SKIP() << "promtool not found (Debian package prometheus)";
    const std::string in_dir = "cd '" + std::string(TERN_DEPLOY_DIR) + "/prometheus' && ";
    const testing::ToolResult check = testing::run_tool(in_dir + "promtool check rules tern-alerts.yml");
    EXPECT_EQ(check.exit_code, 0) << check.output;
    const testing::ToolResult unit = testing::run_tool(in_dir + "promtool test rules tern-alerts.test.yml");
    EXPECT_EQ(unit.exit_code, 0) << unit.output;
}

TEST(AlertRules, EveryMetricTheyReadIsOneTernServeExports) {
    const std::set<std::string> used =
        testing::metrics_read_by(testing::read_deploy_file("prometheus/tern-alerts.yml"));
    EXPECT_GE(used.size(), 4u);
    for (const std::string& metric : testing::not_exported(used)) ADD_FAILURE() << metric << " is not exported";
}

}  // namespace
}  // namespace tern
