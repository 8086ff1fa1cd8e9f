// deploy/kubernetes/*.yaml: every object is valid against the Kubernetes API schemas (kubernetes-models, and the
// Prometheus Operator's for the PodMonitor; tests/e2e/node/k8s_manifests.mjs), and the tern serve Deployment's
// probes are the server's own endpoints. Skipped where node or the npm packages are not installed
// (scripts/install-deps --test installs both).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace tern {
namespace {

namespace fs = std::filesystem;

TEST(KubernetesManifests, EveryObjectMatchesItsApiSchema) {
    const std::string node = TERN_NODE;
    const fs::path script = fs::path(TERN_NODE_DIR) / "k8s_manifests.mjs";
    if (node.empty() || !fs::exists(fs::path(TERN_NODE_DIR) / "node_modules" / "kubernetes-models")) {
        GTEST_SKIP() << "node or tests/e2e/node's packages are missing (scripts/install-deps --test)";
    }
    const fs::path log = fs::path(::testing::TempDir()) / ("k8s_" + std::to_string(::getpid()) + ".log");
    const std::string command = "'" + node + "' '" + script.string() + "' '" + std::string(TERN_DEPLOY_DIR) +
                                "/kubernetes' > '" + log.string() + "' 2>&1";
    const int status = std::system(command.c_str());
    std::ifstream stream(log);
    const std::string output((std::istreambuf_iterator<char>(stream)), {});
    fs::remove(log);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
    EXPECT_NE(output.find(" objects valid, 0 failed"), std::string::npos) << output;
}

TEST(KubernetesManifests, ProbesAreTheServersReadinessAndHealth) {
    std::ifstream stream(std::string(TERN_DEPLOY_DIR) + "/kubernetes/tern-serve.yaml");
    const std::string manifest((std::istreambuf_iterator<char>(stream)), {});
    ASSERT_FALSE(manifest.empty());
    EXPECT_NE(manifest.find("readinessProbe:\n            httpGet: {path: /ready, port: http}"), std::string::npos);
    EXPECT_NE(manifest.find("livenessProbe:\n            httpGet: {path: /health, port: http}"), std::string::npos);
    EXPECT_NE(manifest.find("metric: {name: tern_num_requests_waiting}"), std::string::npos);
}

}  // namespace
}  // namespace tern
