// The /dashboard page in headless Chromium (tests/e2e/node/dashboard.mjs, Playwright over Debian's chromium) against
// a live server under `tern bench serve` load, for tern serve and for tern route in front of it: every chart draws
// points from the server's own metrics, the table lists recent requests, and the chat playground streams the same
// answer a plain request gets. The screenshots stay in build/test_tmp/dashboard/ and dashboard-route/ to be looked at.
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "serve_process.h"

namespace tern::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool is_png(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char signature[8] = {};
    in.read(signature, 8);
    return in && std::string(signature + 1, 3) == "PNG" && fs::file_size(path) > 20'000;
}

// Runs dashboard.mjs against `server` (tern serve, or tern route in front of one) while `tern bench serve` loads it,
// and checks what the page showed: every chart named in `charts` has points, the table rows, no console errors, and
// the playground's streamed answer equals a plain chat completion's through the same server.
void expect_dashboard_works(const ServeProcess& server, const std::string& model, const std::string& key,
                            const std::vector<std::string>& charts, const std::string& out_dir) {
    std::vector<std::string> load_args = {TERN_BINARY, "bench", "serve", "--base-url", server.base_url(),
                                          "--model", model, "--num-prompts", "2000", "--request-rate", "8",
                                          "--max-concurrency", "4", "--input-len", "64", "--output-len", "32",
                                          "--prefix-len", "16", "--no-progress"};
    HeaderList auth;
    if (!key.empty()) {
        load_args.insert(load_args.end(), {"--header", "Authorization=Bearer " + key});
        auth.emplace_back("Authorization", "Bearer " + key);
    }
    const pid_t load = spawn_with_log(load_args, out_dir + "-load.log");
    fs::remove_all(out_dir);
    const CommandResult page = run_command("'" + std::string(TERN_NODE) + "' '" + TERN_NODE_DIR + "/dashboard.mjs' '" +
                                           server.base_url() + "' '" + out_dir + "' '" + key + "' 12");
    ::kill(load, SIGINT);
    ::waitpid(load, nullptr, 0);
    ASSERT_EQ(page.exit_code, 0) << page.err << "\nserver log:\n" << server.log();
    const json shown = json::parse(page.out);
    for (const std::string& chart : charts) EXPECT_GT(shown["charts"].value(chart, 0), 0) << chart << ": " << page.out;
    EXPECT_EQ(shown["charts"].size(), charts.size()) << page.out;
    EXPECT_GT(shown["recent_rows"].get<int>(), 0);
    EXPECT_EQ(shown["model"], model);
    EXPECT_TRUE(shown["error"].is_null()) << page.out;
    EXPECT_EQ(shown["console_errors"], json::array()) << page.out;
    const HttpReply plain = http_post(server.port(), "/v1/chat/completions",
                                      json{{"model", model},
                                           {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
                                           {"max_tokens", 16},
                                           {"temperature", 0}}
                                          .dump(),
                                      auth);
    ASSERT_EQ(plain.status, 200) << plain.body;
    EXPECT_EQ(shown["answer"], json::parse(plain.body)["choices"][0]["message"]["content"]);
    EXPECT_TRUE(is_png(out_dir + "/dashboard.png"));
    EXPECT_TRUE(is_png(out_dir + "/playground.png"));
}

TEST(Dashboard, ServeChartsDrawFromALiveServerAndThePlaygroundStreams) {
    if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is not installed (scripts/install-deps --test)";
    ServeProcess server;
    ASSERT_EQ(server.start({"-m", small_model_path(), "--api-key", "k", "--served-model-name", "small"}), "");
    expect_dashboard_works(server, "small", "k", {"ttft", "tpot", "tokens", "requests", "cache"},
                           temp_dir() + "/dashboard");
}

TEST(Dashboard, RouteChartsDrawFromTheRouterAndThePlaygroundStreamsThroughIt) {
    if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is not installed (scripts/install-deps --test)";
    ServeProcess replica;
    ASSERT_EQ(replica.start({"-m", small_model_path(), "--served-model-name", "small"}), "");
    const std::string config = temp_dir() + "/dashboard-route-" + std::to_string(::getpid()) + ".toml";
    std::ofstream(config) << "[health]\ninterval_ms = 200\n[pools.main]\nbackends = [\"" << replica.base_url()
                          << "\"]\n[models.small]\npool = \"main\"\n";
    ServeProcess route("route");
    ASSERT_EQ(route.start({"--config", config}), "");
    expect_dashboard_works(route, "small", "", {"ttft", "e2e", "requests", "replicas", "cache"},
                           temp_dir() + "/dashboard-route");
}

}  // namespace
}  // namespace tern::testing
