// One configuration's live state: its pools of replicas (with their health checks running) and the decisions that
// take a request to a replica: header rules, the long-context pool, the canary version, then the pool's balancing
// policy. A reload builds a new Routing and swaps it in; requests under way keep the replicas they hold.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "http/exchange.h"
#include "route/config.h"
#include "route/prober.h"
#include "route/merged_requests.h"
#include "route/replica.h"
#include "route/response_cache.h"
#include "route/tenant_limits.h"

namespace tern::route {

class Pool {
public:
    Pool(PoolConfig config, int eject_after_failures);
    const PoolConfig& config() const { return config_; }
    const std::vector<std::shared_ptr<Replica>>& replicas() const { return replicas_; }
    // The replica for a request under the pool's policy, not one of `tried`; null when none is healthy.
    std::shared_ptr<Replica> pick(std::string_view affinity_key, const std::vector<const Replica*>& tried);

private:
    PoolConfig config_;
    std::vector<std::shared_ptr<Replica>> replicas_;
    std::atomic<uint64_t> round_robin_{0};
};

// Where a request goes, and why (the access log and the metrics say it).
struct RouteDecision {
    Pool* pool = nullptr;
    std::string version;   // the canary version's name; "" for a model with one pool
    std::string reason;    // "model", "canary", "long_context", "header"
};

// The version of `model` for `sticky_key` (a tenant's key hash, or anything stable per client): the same key always
// gets the same version while the weights stay, and over many keys each version's share is its weight's.
const ModelVersion& pick_version(const ModelRoute& model, std::string_view sticky_key);

// A prompt's length in tokens without a tokenizer: bytes / 4, the usual rule for English text and BPE vocabularies.
int64_t estimate_tokens(size_t text_bytes);

class Routing {
public:
    explicit Routing(RouteConfig config);  // starts the health checks

    const RouteConfig& config() const { return config_; }
    Pool* pool(std::string_view name) const;
    RouteDecision decide(const ModelRoute& model, const http::Request& request, std::string_view sticky_key,
                         int64_t prompt_tokens) const;
    // Sets a canary's weights for the next requests (POST /admin/weights): every version of `model` named, each
    // weight >= 0, not all 0. A reload goes back to the file's weights.
    Status set_weights(const std::string& model, const std::map<std::string, double>& weights) const;
    // The versions of `model` with their current weights.
    std::vector<ModelVersion> versions(const ModelRoute& model) const;
    bool any_healthy() const;
    std::vector<std::shared_ptr<Replica>> all_replicas() const;
    // The tenants' budgets, the response cache and the requests in flight that others wait on: a reload starts them
    // afresh (a cached answer may come from a pool the new configuration no longer has).
    TenantLimits& limits() const { return limits_; }
    ResponseCache& cache() const { return cache_; }
    MergedRequests& merged() const { return merged_; }

private:
    RouteConfig config_;
    mutable TenantLimits limits_;  // points into config_.tenants
    mutable ResponseCache cache_;
    mutable MergedRequests merged_;
    mutable std::mutex weights_mutex_;
    mutable std::map<std::string, std::vector<double>, std::less<>> weights_;  // by model, in version order
    std::map<std::string, std::unique_ptr<Pool>, std::less<>> pools_;
    std::unique_ptr<Prober> prober_;  // last: its threads read the replicas
};

}  // namespace tern::route
