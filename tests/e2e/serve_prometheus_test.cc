// A real Prometheus (Debian's package) scrapes tern serve's /metrics every second; after K requests its HTTP API
// reports a TTFT histogram count of K.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "run_command.h"
#include "serve_process.h"

namespace tern {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Prometheus in the background with its output in a log file; killed when the test ends.
class PrometheusProcess {
public:
    ~PrometheusProcess() {
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            ::waitpid(pid_, nullptr, 0);
        }
        if (!data_dir_.empty()) std::filesystem::remove_all(data_dir_);
    }

    void start(int port, int scrape_port) {
        port_ = port;
        data_dir_ = testing::temp_dir() + "/prometheus_" + std::to_string(::getpid());
        std::filesystem::create_directories(data_dir_);
        const std::string config = data_dir_ + "/prometheus.yml";
        std::ofstream(config) << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                              << "scrape_configs:\n  - job_name: tern\n    static_configs:\n"
                              << "      - targets: ['127.0.0.1:" << scrape_port << "']\n";
        log_path_ = data_dir_ + "/prometheus.log";
        std::vector<std::string> words = {TERN_PROMETHEUS, "--config.file=" + config,
                                          "--storage.tsdb.path=" + data_dir_ + "/data",
                                          "--web.listen-address=127.0.0.1:" + std::to_string(port)};
        pid_ = testing::spawn_with_log(std::move(words), log_path_, /*stdout_too=*/true);
    }

    // The value of the instant query's single sample; NaN while there is none.
    double query(const std::string& expression) const {
        const testing::HttpReply reply = testing::http_get(port_, "/api/v1/query?query=" + expression);
        const json body = json::parse(reply.body, nullptr, false);
        if (reply.status != 200 || body.is_discarded() || body["data"]["result"].size() != 1) return std::nan("");
        return std::stod(body["data"]["result"][0]["value"][1].get<std::string>());
    }

    std::string log() const {
        std::ifstream stream(log_path_);
        return std::string(std::istreambuf_iterator<char>(stream), {});
    }

private:
    pid_t pid_ = -1;
    int port_ = 0;
    std::string data_dir_;
    std::string log_path_;
};

TEST(ServePrometheus, ScrapedTtftCountEqualsRequestsSent) {
    if (std::string(TERN_PROMETHEUS).empty()) GTEST_SKIP() << "prometheus is not installed (scripts/install-deps --test)";
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", testing::kStoriesModel, "-t", "1"}), "");
    PrometheusProcess prometheus;
    prometheus.start(testing::free_port(), server.port());

    // K requests of every kind: completions and chat, whole and streamed.
    constexpr int kRequests = 6;
    for (int idx = 0; idx < kRequests; ++idx) {
        const bool chat = idx % 2 == 1;
        json body = {{"max_tokens", 8}, {"stream", idx >= kRequests / 2}};
        if (chat) body["messages"] = json::array({{{"role", "user"}, {"content", "Hi"}}});
        else body["prompt"] = "Once upon a time";
        const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
        const int status = body["stream"] ? testing::post_stream(server.port(), path, body.dump()).status
                                          : testing::http_post(server.port(), path, body.dump()).status;
        ASSERT_EQ(status, 200);
    }
    EXPECT_EQ(testing::metric_value(testing::http_get(server.port(), "/metrics").body,
                                    "tern:time_to_first_token_seconds_count"),
              kRequests);
    // A refused request counts among the answers by status (deploy/prometheus's error-rate alert reads them).
    ASSERT_EQ(testing::http_post(server.port(), "/v1/completions", "{\"prompt\": ").status, 400);

    double count = std::nan("");
    const auto deadline = Clock::now() + std::chrono::seconds(40);
    while (Clock::now() < deadline && count != kRequests) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        count = prometheus.query("tern:time_to_first_token_seconds_count");
    }
    EXPECT_EQ(count, kRequests) << "prometheus log:\n" << prometheus.log();
    EXPECT_EQ(prometheus.query("up%7Bjob%3D%22tern%22%7D"), 1);  // up{job="tern"}
    EXPECT_EQ(prometheus.query("sum%28tern:request_success_total%29"), kRequests);
    // sum(tern:http_responses_total{status="200"}) and {status="400"}
    EXPECT_EQ(prometheus.query("sum%28tern:http_responses_total%7Bstatus%3D%22200%22%7D%29"), kRequests);
    EXPECT_EQ(prometheus.query("sum%28tern:http_responses_total%7Bstatus%3D%22400%22%7D%29"), 1);
    EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace tern
