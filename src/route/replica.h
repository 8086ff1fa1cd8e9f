// One backend server as the router tracks it: health (active checks and passive ejection), the requests it has in
// flight through this router, and the load figures scraped from its /metrics. Shared between the worker threads that
// pick replicas, the I/O threads that finish requests and the prober thread: every field is atomic or locked.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "net/url.h"
#include "route/balancer.h"
#include "route/idle_connections.h"

namespace tern::route {

struct ScrapedLoad {
    double waiting = -1;   // tern:num_requests_waiting or vllm:num_requests_waiting
    double running = -1;   // ...num_requests_running
    double kv_usage = -1;  // ...kv_cache_usage_perc (0..1)
};

class Replica {
public:
    Replica(net::BaseUrl url, int eject_after_failures);

    const net::BaseUrl& url() const { return url_; }
    const std::string& origin() const { return origin_; }
    bool healthy() const { return healthy_.load(); }
    int outstanding() const { return outstanding_.load(); }

    void request_started() { outstanding_.fetch_add(1); }
    void request_finished() { outstanding_.fetch_sub(1); }
    // A request that reached the replica and got an answer (any status below 500).
    void answered();
    // A request that failed on the replica's side (connection refused or broken, 5xx before the body, timeout):
    // after `eject_after_failures` in a row the replica is ejected until a health check passes.
    void failed();
    // The result of an active health check: a pass brings the replica back at once; failures eject it like
    // failed requests do. Returns whether the health changed.
    bool health_checked(bool passed);

    void set_load(const ScrapedLoad& load);
    ReplicaView view() const;
    // Keep-alive connections to this replica between calls.
    const std::shared_ptr<IdleConnections>& idle_connections() const { return idle_connections_; }

private:
    net::BaseUrl url_;
    std::string origin_;
    uint64_t identity_;
    int eject_after_failures_;
    std::atomic<bool> healthy_{true};
    std::atomic<int> consecutive_failures_{0};
    std::atomic<int> outstanding_{0};
    mutable std::mutex load_mutex_;
    ScrapedLoad load_;
    int outstanding_at_scrape_ = 0;
    std::shared_ptr<IdleConnections> idle_connections_ = std::make_shared<IdleConnections>();
};

}  // namespace tern::route
