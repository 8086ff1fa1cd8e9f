// tern route's Prometheus metrics: what clients saw through the router (requests by model, pool and status; TTFT
// and end-to-end latency as measured at the router) and what the replicas did (failures by kind, retries, health and
// requests in flight per replica).
#pragma once

#include <memory>
#include <string>

#include "metrics/registry.h"
#include "route/config.h"
#include "route/relay.h"

namespace tern::route {

class Routing;

class RouteMetrics {
public:
    RouteMetrics();
    // A relayed request ended. `reason` is the route decision (model, canary, long_context, header, two_tier);
    // `tenant` is empty without tenants.
    void observe(const std::string& model, const std::string& version, const std::string& pool,
                 const std::string& reason, const std::string& tenant, const RelayResult& result);
    // A tenant's request answered without a relay of its own: refused by its budgets (429), or a two-tier request
    // whose small answer was kept (the small tier's relay is not the tenant's). `tokens` < 0: none to count.
    void tenant_answered(const std::string& tenant, int status, double tokens);
    // A request answered by the router itself (401, 404, 400, 503 ...).
    void refused(int status);
    // A request answered from the cache, or from an identical request in flight.
    void cache_hit() { cache_hits_->get().inc(); }
    void merged() { merged_->get().inc(); }
    // Two-tier accounting. A small-tier answer used `tokens` (prompt and completion; <0 unknown) and was `kept` for
    // the client or escalated; a large-tier answer used `tokens`. Each adds to the tokens and cost of its tier, at the
    // route's prices, and to the estimate of what large-only would have cost: a kept small answer as many tokens at
    // the large price, an escalated one nothing (its large answer counts). `escalated` says why.
    void small_tier_answered(const std::string& model, const TwoTierConfig& tiers, double tokens, bool kept);
    void large_tier_answered(const std::string& model, const TwoTierConfig& tiers, double tokens);
    void escalated(const std::string& model, const std::string& reason);
    // The per-replica gauges of `routing` (after each reload).
    void watch(const std::shared_ptr<const Routing>& routing);
    std::string render() const { return registry_.render(); }

private:
    metrics::Registry registry_;
    metrics::Family<metrics::Counter>* requests_ = nullptr;
    metrics::Family<metrics::Counter>* refused_ = nullptr;
    metrics::Family<metrics::Counter>* tenant_requests_ = nullptr;
    metrics::Family<metrics::Counter>* tenant_tokens_ = nullptr;
    metrics::Family<metrics::Counter>* upstream_failures_ = nullptr;
    metrics::Family<metrics::Counter>* retries_ = nullptr;
    metrics::Family<metrics::Counter>* cache_hits_ = nullptr;
    metrics::Family<metrics::Counter>* merged_ = nullptr;
    metrics::Family<metrics::Counter>* tier_requests_ = nullptr;
    metrics::Family<metrics::Counter>* tier_tokens_ = nullptr;
    metrics::Family<metrics::Counter>* tier_cost_ = nullptr;
    metrics::Family<metrics::Counter>* escalations_ = nullptr;
    metrics::Family<metrics::Histogram>* ttft_ = nullptr;
    metrics::Family<metrics::Histogram>* e2e_ = nullptr;
    metrics::Family<metrics::Gauge>* healthy_ = nullptr;
    metrics::Family<metrics::Gauge>* outstanding_ = nullptr;
};

}  // namespace tern::route
