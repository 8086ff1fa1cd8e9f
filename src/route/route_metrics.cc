#include "route/route_metrics.h"

#include "route/routing.h"

namespace tern::route {
namespace {

template <typename T>
T* must(Result<T*> family) {
    TERN_CHECK(family.is_ok()) << family.status().message();
    return family.value();
}

// Seconds, from 1 ms to 5 minutes: a router's own answers take microseconds, a long generation minutes.
std::vector<double> latency_bounds() {
    return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
}

}  // namespace

RouteMetrics::RouteMetrics() {
    requests_ = must(registry_.add_counter("tern_route:requests_total",
                                           "Requests relayed, by model, canary version, pool, route decision and status",
                                           {"model", "version", "pool", "reason", "code"}));
    tenant_requests_ = must(registry_.add_counter("tern_route:tenant_requests_total",
                                                  "A tenant's requests, relayed or refused by its budgets, by status",
                                                  {"tenant", "code"}));
    tenant_tokens_ = must(registry_.add_counter("tern_route:tenant_tokens_total",
                                                "Tokens (prompt and completion) a tenant's relayed requests used, as "
                                                "the replicas reported them", {"tenant"}));
    refused_ = must(registry_.add_counter("tern_route:refused_total",
                                          "Requests answered by the router without a replica, by status", {"code"}));
    upstream_failures_ = must(registry_.add_counter("tern_route:upstream_failures_total",
                                                    "Attempts that failed on the replica's side", {"replica", "kind"}));
    retries_ = must(registry_.add_counter("tern_route:retries_total", "Requests retried on another replica", {"pool"}));
    cache_hits_ = must(registry_.add_counter("tern_route:cache_hits_total", "Requests answered from the response cache"));
    merged_ = must(registry_.add_counter("tern_route:merged_total",
                                         "Requests answered by an identical request in flight (not sent to a replica)"));
    tier_requests_ = must(registry_.add_counter("tern_route:two_tier_requests_total",
                                                "Two-tier requests by the tier that answered", {"model", "tier"}));
    tier_tokens_ = must(registry_.add_counter("tern_route:two_tier_tokens_total",
                                              "Tokens (prompt and completion) each tier used", {"model", "tier"}));
    tier_cost_ = must(registry_.add_counter("tern_route:two_tier_cost_total",
                                            "Two-tier spending at the route's prices (per million tokens): 'actual', and "
                                            "'large_only', what sending every request to the large tier would have cost",
                                            {"model", "basis"}));
    escalations_ = must(registry_.add_counter("tern_route:escalations_total",
                                              "Two-tier requests sent on to the large tier, by reason",
                                              {"model", "reason"}));
    ttft_ = must(registry_.add_histogram("tern_route:time_to_first_token_seconds",
                                         "From the request's arrival to its first relayed event (whole answers: the answer)",
                                         latency_bounds(), {"model"}));
    e2e_ = must(registry_.add_histogram("tern_route:e2e_request_latency_seconds",
                                        "From the request's arrival to its last byte", latency_bounds(), {"model"}));
    healthy_ = must(registry_.add_gauge("tern_route:replica_healthy", "1 when the replica takes requests", {"replica"}));
    outstanding_ = must(registry_.add_gauge("tern_route:replica_requests_in_flight",
                                            "Requests in flight to the replica through this router", {"replica"}));
}

void RouteMetrics::observe(const std::string& model, const std::string& version, const std::string& pool,
                           const std::string& reason, const std::string& tenant, const RelayResult& result) {
    requests_->with_labels({model, version, pool, reason, std::to_string(result.status)}).inc();
    if (!tenant.empty()) {
        tenant_requests_->with_labels({tenant, std::to_string(result.status)}).inc();
        if (result.usage_tokens > 0) tenant_tokens_->with_labels({tenant}).inc(result.usage_tokens);
    }
    if (result.attempts > 1) retries_->with_labels({pool}).inc(result.attempts - 1);
    if (result.failure != UpstreamFailure::kNone && result.failure != UpstreamFailure::kCancelled) {
        upstream_failures_->with_labels({result.replica, std::string(to_string(result.failure))}).inc();
    }
    if (result.status < 400) {
        if (result.ttft_ms >= 0) ttft_->with_labels({model}).observe(result.ttft_ms / 1000);
        e2e_->with_labels({model}).observe(result.total_ms / 1000);
    }
}

void RouteMetrics::small_tier_answered(const std::string& model, const TwoTierConfig& tiers, double tokens,
                                       bool kept) {
    if (kept) tier_requests_->with_labels({model, "small"}).inc();
    if (tokens <= 0) return;
    tier_tokens_->with_labels({model, "small"}).inc(tokens);
    tier_cost_->with_labels({model, "actual"}).inc(tokens * tiers.small_price_per_mtok / 1e6);
    if (kept) tier_cost_->with_labels({model, "large_only"}).inc(tokens * tiers.large_price_per_mtok / 1e6);
}

void RouteMetrics::large_tier_answered(const std::string& model, const TwoTierConfig& tiers, double tokens) {
    tier_requests_->with_labels({model, "large"}).inc();
    if (tokens <= 0) return;
    tier_tokens_->with_labels({model, "large"}).inc(tokens);
    const double cost = tokens * tiers.large_price_per_mtok / 1e6;
    tier_cost_->with_labels({model, "actual"}).inc(cost);
    tier_cost_->with_labels({model, "large_only"}).inc(cost);
}

void RouteMetrics::tenant_answered(const std::string& tenant, int status, double tokens) {
    tenant_requests_->with_labels({tenant, std::to_string(status)}).inc();
    if (tokens > 0) tenant_tokens_->with_labels({tenant}).inc(tokens);
}

void RouteMetrics::escalated(const std::string& model, const std::string& reason) {
    escalations_->with_labels({model, reason}).inc();
}

void RouteMetrics::refused(int status) { refused_->with_labels({std::to_string(status)}).inc(); }

void RouteMetrics::watch(const std::shared_ptr<const Routing>& routing) {
    for (const auto& replica : routing->all_replicas()) {
        std::weak_ptr<Replica> weak_replica = replica;
        healthy_->set_callback({replica->origin()}, [weak_replica] {
            auto alive = weak_replica.lock();
            return alive && alive->healthy() ? 1.0 : 0.0;
        });
        outstanding_->set_callback({replica->origin()}, [weak_replica] {
            auto alive = weak_replica.lock();
            return alive ? static_cast<double>(alive->outstanding()) : 0.0;
        });
    }
}

}  // namespace tern::route
