// Active health checks and load scraping of every replica, each on its own thread so that one backend that hangs
// delays no other: GET /ready every health interval (a replica without /ready, e.g. llama-server, is checked on
// /health), and, for load-aware pools, GET /metrics every scrape interval for the queue depth and KV use.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "route/config.h"
#include "route/replica.h"

namespace tern::route {

// The load figures of a /metrics text: tern's and vLLM's names alike, label sets summed; -1 where absent.
ScrapedLoad parse_load(std::string_view metrics_text);

class Prober {
public:
    struct Target {
        std::shared_ptr<Replica> replica;
        bool scrape_load = false;
    };
    Prober(std::vector<Target> targets, HealthConfig health);
    ~Prober();  // stops and joins every thread (each within one request timeout)

private:
    void run(const Target& target);
    bool wait_until(std::chrono::steady_clock::time_point deadline);  // false once stopping

    std::vector<Target> targets_;
    HealthConfig health_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace tern::route
