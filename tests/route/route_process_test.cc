// `tern route` as a process: a bad configuration is one error line and exit 1; SIGHUP reloads a good file without
// dropping a connection and keeps the running configuration when the new file is bad; SIGTERM exits 0.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fixture_backend.h"
#include "serve_process.h"

namespace tern {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string write_config(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(TERN_TEST_TMP);
    const std::string path = std::string(TERN_TEST_TMP) + "/route_" + std::to_string(::getpid()) + "_" + name;
    std::ofstream(path) << text;
    return path;
}

std::string config_for(const std::string& model, const std::string& url) {
    return "[health]\ninterval_ms = 100\n[pools.main]\nbackends = [\"" + url + "\"]\n[models." + model +
           "]\npool = \"main\"\n";
}

TEST(RouteProcess, ABadConfigurationIsOneLineNamingTheKey) {
    const std::string path = write_config("bad.toml", "[pools.main]\nbackends = [\"http://127.0.0.1:1\"]\n"
                                                      "polcy = \"x\"\n[models.m]\npool = \"main\"\n");
    testing::ServeProcess route("route");
    route.launch({"--config", path});
    EXPECT_EQ(route.wait(5s), 1) << route.log();
    const std::string log = route.log();
    EXPECT_NE(log.find("tern: error: " + path + ": pools.main.polcy: unknown key"), std::string::npos) << log;
}

TEST(RouteProcess, SighupReloadsAGoodFileAndKeepsTheOldOneForABadFile) {
    testing::FixtureBackend backend;
    const std::string path = write_config("reload.toml", config_for("first", backend.url()));
    testing::ServeProcess route("route");
    ASSERT_EQ(route.start({"--config", path}), "");
    const std::string first = R"({"model": "first", "prompt": "x"})";
    const std::string second = R"({"model": "second", "prompt": "x"})";
    ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", first).status, 200);
    ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", second).status, 404);

    std::ofstream(path) << config_for("second", backend.url());
    route.send_signal(SIGHUP);
    ASSERT_TRUE(route.wait_for_log("SIGHUP: reloaded", 5s)) << route.log();
    EXPECT_EQ(testing::http_post(route.port(), "/v1/completions", second).status, 200);
    EXPECT_EQ(testing::http_post(route.port(), "/v1/completions", first).status, 404);

    std::ofstream(path) << "[pools.main]\nbackends = 3\n";
    route.send_signal(SIGHUP);
    ASSERT_TRUE(route.wait_for_log("the running one stays", 5s)) << route.log();
    EXPECT_NE(route.log().find("pools.main.backends"), std::string::npos) << route.log();
    EXPECT_EQ(testing::http_post(route.port(), "/v1/completions", second).status, 200);
    EXPECT_EQ(route.stop(), 0) << route.log();
}

#ifdef TERN_NODE
// The official openai npm client through tern route in front of a tern serve replica (tests/e2e/node/route.mjs).
TEST(RouteProcess, TheOpenAiClientWorksThroughTheRouter) {
    ASSERT_TRUE(std::filesystem::exists(std::string(TERN_NODE_DIR) + "/node_modules/openai"))
        << "the openai npm package is missing: run scripts/install-deps --test";
    testing::ServeProcess replica;
    ASSERT_EQ(replica.start({"-m", testing::tiny_model_path(), "-t", "1", "--served-model-name", "tiny-route"}), "");
    const std::string path = write_config(
        "node.toml", config_for("tiny-route", replica.base_url()) +
                         "[tenants.t]\nkey_sha256 = \"85dbe15d75ef9308c7ae0f33c7a324cc6f4bf519a2ed2f3027bd33c140a4f9aa\"\n");
    testing::ServeProcess route("route");
    ASSERT_EQ(route.start({"--config", path}), "");
    const testing::ScriptResult result = testing::run_node_script(
        TERN_NODE, TERN_NODE_DIR,
        {{"TERN_BASE_URL", route.base_url()}, {"TERN_DIRECT_URL", replica.base_url()}, {"TERN_ROUTE_KEY", "secret-key"},
         {"TERN_MODEL_NAME", "tiny-route"}, {"TERN_MODEL_PATH", testing::tiny_model_path()},
         {"TERN_BINARY", TERN_BINARY}},
        "route.mjs");
    EXPECT_TRUE(result.ok) << result.output << "\nrouter log:\n" << route.log();
    EXPECT_EQ(route.stop(), 0) << route.log();
}
#endif

}  // namespace
}  // namespace tern
