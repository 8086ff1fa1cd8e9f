#include "route/idle_connections.h"

#include <algorithm>

namespace tern::route {

std::optional<boost::asio::ip::tcp::socket> IdleConnections::take() {
    std::lock_guard lock(mutex_);
    const auto oldest_kept = std::chrono::steady_clock::now() - kMaxIdleTime;
    // Sockets close as they are destroyed: the stale ones at the front go with the erase.
    const auto fresh = std::find_if(idle_.begin(), idle_.end(), [&](const Idle& idle) { return idle.since >= oldest_kept; });
    idle_.erase(idle_.begin(), fresh);
    if (idle_.empty()) return std::nullopt;
    std::optional<boost::asio::ip::tcp::socket> socket(std::move(idle_.back().socket));
    idle_.pop_back();
    return socket;
}

void IdleConnections::keep(boost::asio::ip::tcp::socket socket) {
    std::lock_guard lock(mutex_);
    if (idle_.size() >= kMaxIdle) idle_.erase(idle_.begin());
    idle_.push_back(Idle{std::move(socket), std::chrono::steady_clock::now()});
}

size_t IdleConnections::size() const {
    std::lock_guard lock(mutex_);
    return idle_.size();
}

}  // namespace tern::route
