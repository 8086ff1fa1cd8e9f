// Clients that leave before their answer: a non-streaming request whose client closes the connection mid-generation,
// and a streamed request whose client leaves while it still waits in the queue (no event sent yet). The server
// notices each from the socket, aborts the request and frees its KV within a second, instead of generating to
// max_tokens for nobody. A streaming client that stays but never reads is aborted once its unsent backlog passes
// --max-unsent-bytes, so that it cannot grow the server's memory without bound.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "serve_process.h"

namespace tern {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double scrape(const testing::ServeProcess& server, const std::string& sample) {
    return testing::metric_value(testing::http_get(server.port(), "/metrics").body, sample);
}

// Sends a POST on a socket of its own and returns the socket without reading anything; closing it drops the client.
// `receive_buffer` > 0 shrinks the socket's receive buffer (before connecting, so that the window follows).
int send_request(int port, const std::string& body, int receive_buffer = 0) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
        ::close(fd);
        return -1;
    }
    const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
        ::close(fd);
        return -1;
    }
    return fd;
}

std::string long_request(bool stream) {
    return nlohmann::json{{"prompt", "Once upon a time"}, {"max_tokens", 1500}, {"ignore_eos", true}, {"stream", stream}}
        .dump();
}

// Waits until `sample` reads `value`; returns how long that took (or the timeout).
Clock::duration wait_for_metric(const testing::ServeProcess& server, const std::string& sample, double value,
                                Clock::duration timeout) {
    const auto start = Clock::now();
    while (Clock::now() - start < timeout && scrape(server, sample) != value) std::this_thread::sleep_for(5ms);
    return Clock::now() - start;
}

TEST(ServeDisconnect, DroppedNonStreamingClientsAreAbortedAndFreeTheirKv) {
    constexpr int kClients = 4;
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", testing::small_model_path()}), "");
    std::vector<int> sockets;
    for (int idx = 0; idx < kClients; ++idx) sockets.push_back(send_request(server.port(), long_request(false)));
    for (int fd : sockets) ASSERT_GE(fd, 0);
    ASSERT_LT(wait_for_metric(server, "tern:num_requests_running", kClients, 10s), 10s) << server.log();
    std::this_thread::sleep_for(200ms);  // mid-generation
    ASSERT_GT(scrape(server, "tern:kv_cache_usage_perc"), 0.0);
    for (int fd : sockets) ::close(fd);
    EXPECT_LT(wait_for_metric(server, "tern:num_requests_running", 0, 5s), 1s) << server.log();
    EXPECT_EQ(scrape(server, "tern:kv_cache_usage_perc"), 0.0);
    EXPECT_EQ(scrape(server, "tern:request_success_total{finished_reason=\"abort\"}"), kClients);
    EXPECT_LT(scrape(server, "tern:generation_tokens_total"), kClients * 1500 / 2) << "stopped long before the end";
    EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(ServeDisconnect, StreamDroppedWhileQueuedIsAbortedBeforeItRuns) {
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", testing::small_model_path(), "--max-running", "1"}), "");
    const int running = send_request(server.port(), long_request(false));
    ASSERT_LT(wait_for_metric(server, "tern:num_requests_running", 1, 10s), 10s);
    const int queued = send_request(server.port(), long_request(true));
    ASSERT_LT(wait_for_metric(server, "tern:num_requests_waiting", 1, 10s), 10s);
    ::close(queued);
    EXPECT_LT(wait_for_metric(server, "tern:num_requests_waiting", 0, 5s), 1s) << server.log();
    EXPECT_EQ(scrape(server, "tern:request_success_total{finished_reason=\"abort\"}"), 1);
    EXPECT_EQ(scrape(server, "tern:num_requests_running"), 1) << "the other request goes on";
    ::close(running);
    EXPECT_LT(wait_for_metric(server, "tern:num_requests_running", 0, 5s), 1s);
    EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(ServeDisconnect, StreamNeverReadIsAbortedPastItsUnsentBacklog) {
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", testing::small_model_path(), "--max-unsent-bytes", "65536"}), "");
    // With five logprobs an event is about 430 bytes: 1,500 of them (645 KB) are far more than 64 KiB plus what the
    // kernel holds for a stream (its send buffer is limited to 128 KiB) and the client's 4 KiB.
    const std::string body = nlohmann::json{{"prompt", "Once upon a time"}, {"max_tokens", 1500}, {"ignore_eos", true},
                                            {"stream", true}, {"logprobs", 5}}.dump();
    const int never_reads = send_request(server.port(), body, 4096);
    ASSERT_GE(never_reads, 0);
    ASSERT_LT(wait_for_metric(server, "tern:request_success_total{finished_reason=\"abort\"}", 1, 60s), 60s)
        << server.log();
    EXPECT_EQ(scrape(server, "tern:num_requests_running"), 0);
    EXPECT_EQ(scrape(server, "tern:kv_cache_usage_perc"), 0.0);
    EXPECT_LT(scrape(server, "tern:generation_tokens_total"), 1500 / 2) << "stopped long before the end";
    ::close(never_reads);
    EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace tern
