#include "route/replica.h"

#include <xxhash.h>

#include "base/log.h"

namespace tern::route {

Replica::Replica(net::BaseUrl url, int eject_after_failures)
    : url_(std::move(url)),
      origin_(url_.origin() + url_.path_prefix),
      identity_(XXH3_64bits(origin_.data(), origin_.size())),
      eject_after_failures_(eject_after_failures) {}

void Replica::answered() { consecutive_failures_.store(0); }

void Replica::failed() {
    if (consecutive_failures_.fetch_add(1) + 1 >= eject_after_failures_ && healthy_.exchange(false)) {
        log_warn("route: replica {} ejected after {} failures in a row", origin_, eject_after_failures_);
    }
}

bool Replica::health_checked(bool passed) {
    if (passed) {
        consecutive_failures_.store(0);
        const bool was_healthy = healthy_.exchange(true);
        if (!was_healthy) log_info("route: replica {} is healthy again", origin_);
        return !was_healthy;
    }
    const bool was_healthy = healthy();
    failed();
    return was_healthy != healthy();
}

void Replica::set_load(const ScrapedLoad& load) {
    std::lock_guard lock(load_mutex_);
    load_ = load;
    outstanding_at_scrape_ = outstanding_.load();
}

ReplicaView Replica::view() const {
    ReplicaView view{.healthy = healthy(), .outstanding = outstanding(), .identity = identity_};
    std::lock_guard lock(load_mutex_);
    view.waiting = load_.waiting;
    view.kv_usage = load_.kv_usage;
    view.outstanding_at_scrape = outstanding_at_scrape_;
    return view;
}

}  // namespace tern::route
