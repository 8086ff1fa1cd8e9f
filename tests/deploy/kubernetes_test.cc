// deploy/kubernetes/*.yaml: every object is valid against the Kubernetes API schemas (kubernetes-models, and the
// Prometheus Operator's for the PodMonitor; tests/e2e/node/k8s_manifests.mjs), and the tern serve Deployment's
// probes are the server's own endpoints. Skipped where node or the npm packages are not installed
// (scripts/install-deps --test installs both).
#include <gtest/gtest.h>

#include "deploy_helpers.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

TEST(KubernetesManifests, EveryObjectMatchesItsApiSchema) {
    const std::string node = TERN_NODE;
    const fs::path script = fs::path(TERN_NODE_DIR) / "k8s_manifests.mjs";
    if (node.empty() || !fs::exists(fs::path(TERN_NODE_DIR) / "node_modules" / "kubernetes-models")) {
        GTEST_SKIP() << "node or tests/e2e/node's packages are missing (scripts/install-deps --test)";
    }
    const testing::ToolResult check = testing::run_tool("'" + node + "' '" + script.string() + "' '" +
                                                        std::string(TERN_DEPLOY_DIR) + "/kubernetes'");
    EXPECT_EQ(check.exit_code, 0) << check.output;
    EXPECT_NE(check.output.find(" objects valid, 0 failed"), std::string::npos) << check.output;
}

TEST(KubernetesManifests, ProbesAreTheServersReadinessAndHealth) {
    const std::string manifest = testing::read_deploy_file("kubernetes/tern-serve.yaml");
    ASSERT_FALSE(manifest.empty());
    EXPECT_NE(manifest.find("readinessProbe:\n            httpGet: {path: /ready, port: http}"), std::string::npos);
    EXPECT_NE(manifest.find("livenessProbe:\n            httpGet: {path: /health, port: http}"), std::string::npos);
    EXPECT_NE(manifest.find("metric: {name: tern_num_requests_waiting}"), std::string::npos);
}

}  // namespace
}  // namespace tern
