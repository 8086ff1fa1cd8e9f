// tern serve's life outside the happy path: a model that cannot be loaded ends the process at once with the reason,
// SIGTERM / SIGINT are honoured while the model loads, requests cut off by the drain timeout get 503 (an SSE error
// event when streamed), and a shutdown while clients scrape /metrics and generate exits cleanly (under ASan in
// scripts/test, a use-after-free there is a failure).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "serve_process.h"

namespace tern {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using namespace std::chrono_literals;

std::string temp_path(const std::string& name) {
    std::filesystem::create_directories(TERN_TEST_TMP);
    return std::string(TERN_TEST_TMP) + "/lifecycle_" + std::to_string(::getpid()) + "_" + name;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Today's bound is generous for a loaded CI machine; before the fix these runs never ended at all.
constexpr auto kPromptExit = 5s;

TEST(ServeLifecycle, MissingModelFileExitsAtOnceWithTheReason) {
    const std::string path = temp_path("does-not-exist.gguf");
    testing::ServeProcess server;
    const auto start = Clock::now();
    server.launch({"-m", path});
    EXPECT_EQ(server.wait(kPromptExit), 1) << server.log();
    EXPECT_LT(seconds_since(start), 2.0) << server.log();
    const std::string log = server.log();
    EXPECT_NE(log.find("tern: error:"), std::string::npos) << log;
    EXPECT_NE(log.find(path), std::string::npos) << "the error names the file: " << log;
}

TEST(ServeLifecycle, CorruptModelFileExitsAtOnceWithTheReason) {
    const std::string path = temp_path("corrupt.gguf");
    {
        std::ofstream file(path, std::ios::binary);
        file << "GGUF" << std::string(60, '\xff');
    }
    testing::ServeProcess server;
    server.launch({"-m", path});
    EXPECT_EQ(server.wait(kPromptExit), 1) << server.log();
    EXPECT_NE(server.log().find("tern: error:"), std::string::npos) << server.log();
}

// A FIFO as the model file: opening it blocks until a writer comes, a load that never ends on its own.
void expect_signal_ends_a_slow_load(int signal, const std::string& name) {
    const std::string path = temp_path(name + ".gguf");
    std::filesystem::remove(path);
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    testing::ServeProcess server;
    server.launch({"-m", path});
    ASSERT_TRUE(server.wait_for_log("listening on", 30s)) << server.log();
    std::this_thread::sleep_for(100ms);  // into the blocked open()
    ASSERT_TRUE(server.running()) << server.log();
    const auto start = Clock::now();
    server.send_signal(signal);
    EXPECT_EQ(server.wait(kPromptExit), 0) << server.log();
    EXPECT_LT(seconds_since(start), 2.0);
    EXPECT_NE(server.log().find("while loading the model: exiting"), std::string::npos) << server.log();
    std::filesystem::remove(path);
}

TEST(ServeLifecycle, SigtermDuringASlowLoadExits) { expect_signal_ends_a_slow_load(SIGTERM, "fifo-term"); }
TEST(ServeLifecycle, SigintDuringASlowLoadExits) { expect_signal_ends_a_slow_load(SIGINT, "fifo-int"); }

// Requests still running when the drain timeout passes did not finish: they are not "stop"ped 200s.
TEST(ServeLifecycle, DrainTimeoutAnswers503) {
    testing::ServeProcess server;
    const std::string error = server.start({"-m", testing::small_model_path(), "--drain-timeout", "0.3"});
    ASSERT_TRUE(error.empty()) << error;
    const std::string body = R"({"prompt": "once upon a time", "max_tokens": 1500, "ignore_eos": true)";
    testing::HttpReply whole;
    testing::StreamReply streamed;
    std::atomic<int> num_streamed_events{0};
    std::thread whole_client([&] { whole = testing::http_post(server.port(), "/v1/completions", body + "}"); });
    std::thread stream_client([&] {
        streamed = testing::post_stream(server.port(), "/v1/completions", body + R"(, "stream": true})",
                                        [&](const std::string&) { return ++num_streamed_events, true; });
    });
    const auto deadline = Clock::now() + 30s;
    while (num_streamed_events.load() < 3 && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
    server.send_signal(SIGTERM);
    whole_client.join();
    stream_client.join();
    EXPECT_EQ(server.wait(30s), 0) << server.log();
    EXPECT_EQ(whole.status, 503) << whole.body;
    EXPECT_NE(whole.body.find("drain timeout"), std::string::npos) << whole.body;
    EXPECT_EQ(streamed.status, 200);
    ASSERT_GE(streamed.events.size(), 2u) << streamed.body;
    const json last = json::parse(streamed.events[streamed.events.size() - 2], nullptr, false);
    EXPECT_TRUE(last.is_object() && last.contains("error")) << "an error event before [DONE]: " << streamed.body;
    EXPECT_TRUE(streamed.done);
}

// With no --max-batched-tokens the step budget is sized from a prefill timed at start and said in the log; a budget
// given is taken as it is.
TEST(ServeLifecycle, TheStepBudgetIsSizedAtStartUnlessGiven) {
    testing::ServeProcess sized;
    std::string error = sized.start({"-m", testing::kStoriesModel});
    ASSERT_TRUE(error.empty()) << error;
    EXPECT_NE(sized.log().find("-token prefill took"), std::string::npos) << sized.log();
    EXPECT_EQ(testing::http_post(sized.port(), "/v1/completions", R"({"prompt": "Once", "max_tokens": 4})").status, 200);

    testing::ServeProcess given;
    error = given.start({"-m", testing::kStoriesModel, "--max-batched-tokens", "64"});
    ASSERT_TRUE(error.empty()) << error;
    EXPECT_EQ(given.log().find("-token prefill took"), std::string::npos) << given.log();
    EXPECT_NE(given.log().find("max batched tokens 64,"), std::string::npos) << given.log();
}

// --spec-ngram and --draft-model (here the model itself, whose greedy drafts the model accepts) change no greedy
// text, and their drafts are counted in /metrics (vLLM's spec_decode counters).
TEST(ServeLifecycle, SpeculativeDecodingKeepsTheTextAndIsCounted) {
    const std::string request = R"({"prompt": "Once upon a time", "max_tokens": 192, "temperature": 0})";
    testing::ServeProcess plain;
    std::string error = plain.start({"-m", testing::kStoriesModel});
    ASSERT_TRUE(error.empty()) << error;
    const testing::HttpReply plain_reply = testing::http_post(plain.port(), "/v1/completions", request);
    ASSERT_EQ(plain_reply.status, 200) << plain_reply.body;

    const std::vector<std::string> methods[] = {{"--spec-ngram"}, {"--draft-model", testing::kStoriesModel}};
    for (const std::vector<std::string>& method : methods) {
        SCOPED_TRACE(method.front());
        std::vector<std::string> args = {"-m", testing::kStoriesModel};
        args.insert(args.end(), method.begin(), method.end());
        testing::ServeProcess speculative;
        error = speculative.start(args);
        ASSERT_TRUE(error.empty()) << error;
        const testing::HttpReply reply = testing::http_post(speculative.port(), "/v1/completions", request);
        ASSERT_EQ(reply.status, 200) << reply.body;
        EXPECT_EQ(json::parse(reply.body)["choices"][0]["text"], json::parse(plain_reply.body)["choices"][0]["text"]);

        const std::string metrics = testing::http_get(speculative.port(), "/metrics").body;
        const auto counter = [&](const std::string& name) {
            const size_t at = metrics.find("\n" + name + " ");
            return at == std::string::npos ? -1.0 : std::stod(metrics.substr(at + name.size() + 2));
        };
        const double num_draft_tokens = counter("tern:spec_decode_num_draft_tokens_total");
        const double num_accepted = counter("tern:spec_decode_num_accepted_tokens_total");
        EXPECT_GT(num_draft_tokens, 0.0) << metrics;
        EXPECT_GE(counter("tern:spec_decode_num_drafts_total"), 1.0) << metrics;
        if (method.front() == "--draft-model") {
            EXPECT_GT(num_accepted, 0.8 * num_draft_tokens) << metrics;
            EXPECT_NE(speculative.log().find("speculative decoding: draft model"), std::string::npos)
                << speculative.log();
        } else {
            EXPECT_GE(num_accepted, 0.0) << metrics;  // how many: the model's text
        }
    }
}

// Clients scrape and generate while the server drains and exits: every thread of the server ends before the state
// it reads (engine, metrics) is destroyed.
TEST(ServeLifecycle, ShutdownWhileScrapingMetricsIsClean) {
    testing::ServeProcess server;
    const std::string error = server.start({"-m", testing::kStoriesModel});
    ASSERT_TRUE(error.empty()) << error;
    std::atomic<bool> stop{false};
    std::atomic<int> num_scrapes{0};
    std::vector<std::thread> clients;
    for (int idx = 0; idx < 3; ++idx) {
        clients.emplace_back([&] {
            while (!stop.load()) {
                if (testing::http_get(server.port(), "/metrics").status == 200) ++num_scrapes;
            }
        });
    }
    clients.emplace_back([&] {
        while (!stop.load()) {
            testing::http_post(server.port(), "/v1/completions", R"({"prompt": "Once", "max_tokens": 8})");
        }
    });
    while (num_scrapes.load() < 20) std::this_thread::sleep_for(5ms);
    server.send_signal(SIGTERM);
    const int status = server.wait(60s);
    stop.store(true);
    for (auto& client : clients) client.join();
    EXPECT_EQ(status, 0) << server.log();
    EXPECT_EQ(server.log().find("Sanitizer"), std::string::npos) << server.log();
}

}  // namespace
}  // namespace tern
