#include "route/prober.h"

#include <algorithm>

#include "base/log.h"
#include "metrics/text_parse.h"
#include "net/http_client.h"

namespace tern::route {
namespace {

using Clock = std::chrono::steady_clock;

// The replica is ready: 200 on /ready, or (no /ready) 200 on /health.
bool check_ready(net::HttpClient& client) {
    Result<net::HttpResponse> ready = client.get("/ready");
    if (!ready.is_ok()) return false;
    if (ready.value().status == 404) {
        Result<net::HttpResponse> health = client.get("/health");
        return health.is_ok() && health.value().status == 200;
    }
    return ready.value().status == 200;
}

void add(double& total, double value) { total = total < 0 ? value : total + value; }

}  // namespace

ScrapedLoad parse_load(std::string_view metrics_text) {
    ScrapedLoad load;
    metrics::for_each_sample(metrics_text, [&load](std::string_view name, double value) {
        const size_t colon = name.find(':');
        if (colon == std::string_view::npos) return;
        const std::string_view prefix = name.substr(0, colon);
        const std::string_view metric = name.substr(colon + 1);
        if (prefix != "tern" && prefix != "vllm") return;
        if (metric == "num_requests_waiting") add(load.waiting, value);
        if (metric == "num_requests_running") add(load.running, value);
        // vLLM before 0.10 named it gpu_cache_usage_perc.
        if (metric == "kv_cache_usage_perc" || metric == "gpu_cache_usage_perc") add(load.kv_usage, value);
    });
    return load;
}

Prober::Prober(std::vector<Target> targets, HealthConfig health) : targets_(std::move(targets)), health_(health) {
    for (const Target& target : targets_) threads_.emplace_back([this, &target] { run(target); });
}

Prober::~Prober() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& thread : threads_) thread.join();
}

bool Prober::wait_until(Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    return !wake_.wait_until(lock, deadline, [this] { return stopping_; });
}

void Prober::run(const Target& target) {
    try {
        const auto timeout = std::chrono::milliseconds(health_.timeout_ms);
        net::HttpClient client(target.replica->url(), net::HttpClientOptions{.connect_timeout = timeout,
                                                                             .read_timeout = timeout,
                                                                             .write_timeout = timeout,
                                                                             .total_timeout = timeout});
        Clock::time_point next_check = Clock::now();
        Clock::time_point next_scrape = Clock::now();
        while (true) {
            const Clock::time_point deadline = target.scrape_load ? std::min(next_check, next_scrape) : next_check;
            if (!wait_until(deadline)) return;
            const Clock::time_point now = Clock::now();
            if (now >= next_check) {
                target.replica->health_checked(check_ready(client));
                next_check = now + std::chrono::milliseconds(health_.interval_ms);
            }
            if (target.scrape_load && now >= next_scrape) {
                Result<net::HttpResponse> metrics = client.get("/metrics");
                if (metrics.is_ok() && metrics.value().status == 200) target.replica->set_load(parse_load(metrics.value().body));
                next_scrape = now + std::chrono::milliseconds(health_.scrape_interval_ms);
            }
        }
    } catch (const std::exception& error) {  // a thread's last guard: the replica keeps its last state
        log_error("route: the health checks of {} stopped: {}", target.replica->origin(), error.what());
    }
}

}  // namespace tern::route
