// deploy/grafana/tern-serve.json: a Grafana dashboard whose every query is PromQL that Prometheus parses (each as a
// recording rule under `promtool check rules`, Grafana's $variables replaced) and reads only metrics tern serve
// exports.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "deploy_helpers.h"

namespace tern {
namespace {

std::vector<std::string> queries_of(const nlohmann::json& dashboard) {
    std::vector<std::string> queries;
    for (const nlohmann::json& panel : dashboard["panels"]) {
        for (const nlohmann::json& target : panel["targets"]) queries.push_back(target["expr"].get<std::string>());
    }
    return queries;
}

TEST(GrafanaDashboard, EveryQueryReadsExportedMetricsAndParses) {
    const nlohmann::json dashboard =
        nlohmann::json::parse(testing::read_deploy_file("grafana/tern-serve.json"), nullptr, false);
    ASSERT_TRUE(dashboard.is_object()) << "not JSON";
    const std::vector<std::string> queries = queries_of(dashboard);
    ASSERT_GE(queries.size(), 10u);
    std::string all;
    for (const std::string& query : queries) all += query + "\n";
    for (const std::string& metric : testing::not_exported(testing::metrics_read_by(all))) {
        ADD_FAILURE() << metric << " is not exported";
    }
    if (!testing::have_tool("promtool")) GTEST_SKIP() << "promtool not found (Debian package prometheus)";
    nlohmann::json rules = {{"groups", {{{"name", "dashboard"}, {"rules", nlohmann::json::array()}}}}};
    for (size_t idx = 0; idx < queries.size(); ++idx) {
        std::string expr = std::regex_replace(queries[idx], std::regex("\\$__rate_interval"), "5m");
        expr = std::regex_replace(expr, std::regex("\\$instance"), ".*");
        rules["groups"][0]["rules"].push_back({{"record", "dashboard:query_" + std::to_string(idx)}, {"expr", expr}});
    }
    const std::string path = ::testing::TempDir() + "/dashboard_rules_" + std::to_string(::getpid()) + ".yml";
    std::ofstream(path) << rules.dump(2);  // JSON is YAML
    const testing::ToolResult check = testing::run_tool("promtool check rules '" + path + "'");
    EXPECT_EQ(check.exit_code, 0) << check.output;
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace tern
