// The /dashboard page in headless Chromium (tests/e2e/node/dashboard.mjs, Playwright over Debian's chromium) against
// a live server under `tern bench serve` load: every chart draws points from the server's own metrics, the table
// lists recent requests, and the chat playground streams the same answer a plain request gets. The screenshots stay
// in build/test_tmp/dashboard/ to be looked at.
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

TEST(Dashboard, ChartsDrawFromALiveServerAndThePlaygroundStreams) {
    if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is not installed (scripts/install-deps --test)";
    ServeProcess server;
    ASSERT_EQ(server.start({"-m", small_model_path(), "--api-key", "k"}), "");
    const std::string load_log = temp_dir() + "/dashboard-load.log";
    const pid_t load = spawn_with_log({TERN_BINARY, "bench", "serve", "--base-url", server.base_url(), "--header",
                                       "Authorization=Bearer k", "--num-prompts", "2000", "--request-rate", "8",
                                       "--max-concurrency", "4", "--input-len", "64", "--output-len", "32",
                                       "--prefix-len", "16", "--no-progress"},
                                      load_log);
    const std::string out_dir = temp_dir() + "/dashboard";
    fs::remove_all(out_dir);
    const CommandResult page = run_command("'" + std::string(TERN_NODE) + "' '" + TERN_NODE_DIR + "/dashboard.mjs' '" +
                                           server.base_url() + "' '" + out_dir + "' k 12");
    ::kill(load, SIGINT);
    ::waitpid(load, nullptr, 0);
    ASSERT_EQ(page.exit_code, 0) << page.err << "\nserver log:\n" << server.log();
    const json shown = json::parse(page.out);
    for (const char* chart : {"ttft", "tpot", "tokens", "requests", "cache"}) {
        EXPECT_GT(shown["charts"].value(chart, 0), 0) << chart << ": " << page.out;
    }
    EXPECT_GT(shown["recent_rows"].get<int>(), 0);
    EXPECT_TRUE(shown["error"].is_null()) << page.out;
    EXPECT_EQ(shown["console_errors"], json::array()) << page.out;
    const HttpReply plain = http_post(
        server.port(), "/v1/chat/completions",
        R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 16, "temperature": 0})",
        {{"Authorization", "Bearer k"}});
    ASSERT_EQ(plain.status, 200) << plain.body;
    EXPECT_EQ(shown["answer"], json::parse(plain.body)["choices"][0]["message"]["content"]);
    EXPECT_TRUE(is_png(out_dir + "/dashboard.png"));
    EXPECT_TRUE(is_png(out_dir + "/playground.png"));
}

}  // namespace
}  // namespace tern::testing
