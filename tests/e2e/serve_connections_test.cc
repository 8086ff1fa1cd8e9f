// The connection model: connections are held by the I/O threads, not by a thread each, so thousands of idle
// connections (clients that connected and said nothing, or keep-alive ones between requests) neither block /health
// nor keep a generation request from being served; connections beyond --max-connections are closed at accept.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "serve_process.h"

namespace tern {
namespace {

using Clock = std::chrono::steady_clock;

int connect_to(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Opens up to `count` idle connections (fewer when this process runs out of descriptors); returns them.
std::vector<int> open_idle(int port, int count) {
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    std::vector<int> sockets;
    for (int idx = 0; idx < count; ++idx) {
        const int fd = connect_to(port);
        if (fd < 0) break;
        sockets.push_back(fd);
    }
    return sockets;
}

TEST(ServeConnections, IdleConnectionsDoNotBlockHealthOrGeneration) {
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", testing::kStoriesModel}), "");
    // cpp-httplib's 512 threads were all taken by 512 of these, and /health then waited for one to time out.
    const std::vector<int> idle = open_idle(server.port(), 2000);
    ASSERT_GE(idle.size(), 1500u) << "could not open enough connections in this environment";
    const auto start = Clock::now();
    EXPECT_EQ(testing::http_get(server.port(), "/health").status, 200);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(1)) << "with " << idle.size() << " idle connections open";
    const testing::HttpReply reply =
        testing::http_post(server.port(), "/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 4})");
    EXPECT_EQ(reply.status, 200) << reply.body;
    for (int fd : idle) ::close(fd);
    EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(ServeConnections, ConnectionsBeyondTheLimitAreClosedAtOnce) {
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", testing::kStoriesModel, "--max-connections", "8"}), "");
    std::vector<int> idle = open_idle(server.port(), 8);
    ASSERT_EQ(idle.size(), 8u);
    const int extra = connect_to(server.port());  // the kernel accepts it; the server closes it
    ASSERT_GE(extra, 0);
    timeval timeout{5, 0};
    setsockopt(extra, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    char byte = 0;
    EXPECT_EQ(::recv(extra, &byte, 1, 0), 0) << "closed by the server, not left hanging";
    ::close(extra);
    ::close(idle.back());
    idle.pop_back();
    for (int attempt = 0; attempt < 500 && testing::http_get(server.port(), "/health").status != 200; ++attempt) {
        usleep(10000);
    }
    EXPECT_EQ(testing::http_get(server.port(), "/health").status, 200) << "a freed place is taken again";
    for (int fd : idle) ::close(fd);
    EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace tern
