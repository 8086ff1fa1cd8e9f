// Per-tenant budgets: requests per minute and tokens per minute as token buckets, and a cap on requests in flight.
// A request is admitted or refused before any replica sees it (429 with the bucket's Retry-After); its tokens are
// reserved at admission (the prompt estimated at bytes / 4, plus max_tokens) and reconciled with the usage the
// replica reports, so a tenant is charged what it used.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "route/config.h"

namespace tern::route {

using Clock = std::chrono::steady_clock;

// Refills at `per_minute` / 60 a second up to one second's worth (at least 1), so that over a window the admitted
// amount stays within a second's worth of the budget. A request larger than the whole bucket is admitted when the
// bucket is full and leaves it in debt, so that large requests are slowed, never refused forever.
class TokenBucket {
public:
    explicit TokenBucket(double per_minute);  // full
    // nullopt: taken. Otherwise the seconds until it would be.
    std::optional<double> try_take(double amount, Clock::time_point now);
    // Returns (or, negative, charges) an amount after the fact; the level never exceeds the capacity.
    void adjust(double amount, Clock::time_point now);
    double level(Clock::time_point now);

private:
    void refill(Clock::time_point now);

    double rate_per_second_;
    double capacity_;
    double level_;
    std::optional<Clock::time_point> updated_;  // of the level; none before the first use
};

struct Admission {
    bool admitted = false;
    int status = 200;            // 429 when refused
    std::string message;
    double retry_after_s = 0;
    double reserved_tokens = 0;  // to reconcile() when the request ends
};

class TenantLimits {
public:
    explicit TenantLimits(const std::vector<TenantConfig>& tenants);

    // Checks and takes the tenant's budgets for one request.
    Admission admit(size_t tenant, double estimated_tokens, Clock::time_point now);
    // The request ended: its slot is freed and its tokens charged as used (`used_tokens` < 0: unknown, the
    // reservation stands).
    void finish(size_t tenant, const Admission& admission, double used_tokens, Clock::time_point now);

private:
    struct State {
        std::mutex mutex;
        const TenantConfig* config = nullptr;
        std::optional<TokenBucket> requests;
        std::optional<TokenBucket> tokens;
        int in_flight = 0;
    };
    std::vector<std::unique_ptr<State>> states_;
};

}  // namespace tern::route
