// Keep-alive connections to one replica that finished their last call, for the next call to reuse: the router then
// skips the connect and the replica its accept on most requests. Bounded in count and in idle time (a replica closes
// an idle connection after its own timeout, tern serve's after 15 s; one found closed is retried afresh by the call).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <mutex>
#include <optional>
#include <vector>

namespace tern::route {

class IdleConnections {
public:
    static constexpr size_t kMaxIdle = 256;
    static constexpr std::chrono::seconds kMaxIdleTime{5};

    // The most recently kept connection not idle for too long, if any (older ones are closed on the way).
    std::optional<boost::asio::ip::tcp::socket> take();
    // Keeps an open connection whose last answer ended cleanly with keep-alive; beyond kMaxIdle it is closed.
    void keep(boost::asio::ip::tcp::socket socket);
    size_t size() const;

private:
    struct Idle {
        boost::asio::ip::tcp::socket socket;
        std::chrono::steady_clock::time_point since;
    };
    mutable std::mutex mutex_;
    std::vector<Idle> idle_;  // oldest first
};

}  // namespace tern::route
