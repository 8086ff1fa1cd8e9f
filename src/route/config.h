// tern route's configuration (route.toml): where to listen, the pools of backends and how each balances, the models
// clients may ask for and the pools (or canary versions) that serve them, tenants with their keys and budgets, the
// response cache and the health checks. Parsing checks everything up front: a bad file is one line naming the key
// path and what to change, and a reload that fails keeps the running configuration.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/sha256.h"
#include "base/status.h"
#include "net/url.h"

namespace tern::route {

enum class BalancePolicy {
    kLeastOutstanding,  // the replica with the fewest requests in flight through this router
    kLoadAware,         // the replica whose scraped queue depth and KV use are lowest (llm-d's endpoint picker)
    kPrefixAffinity,    // rendezvous hashing of the prompt's start, with a bounded-load fallback
    kRoundRobin,
};
std::string_view to_string(BalancePolicy policy);

struct PoolConfig {
    std::string name;
    std::vector<net::BaseUrl> backends;
    BalancePolicy policy = BalancePolicy::kLeastOutstanding;
    std::string upstream_model;  // the model name the backends serve; "" keeps the client's
};

// One version of a model and its share of the traffic (canary: e.g. 95 and 5).
struct ModelVersion {
    std::string name;  // "stable", "v2", ...; "" when the model names a single pool
    std::string pool;
    double weight = 1;
};

// A two-tier route (route/two_tier.h): the small pool answers first, the large one when that answer looks weak.
struct TwoTierConfig {
    std::string small_pool;
    std::string large_pool;
    double min_mean_logprob = -1.0;     // below: escalate
    bool escalate_on_length = true;     // finish_reason "length": escalate
    std::vector<std::string> refusals;  // phrases (case-insensitive) that mark an answer as a refusal: escalate
    double small_price_per_mtok = 0;    // for the report: cost per million tokens on each tier
    double large_price_per_mtok = 0;
};

struct ModelRoute {
    std::string name;                    // what clients send as "model"
    std::vector<ModelVersion> versions;  // at least one; weights sum > 0
    // Prompts over this many tokens (estimated: bytes / 4) go to long_context_pool instead.
    int64_t long_context_over_tokens = 0;
    std::string long_context_pool;
    // Set for a two-tier route; `versions` then holds the large pool alone (where escalations and rules go).
    std::optional<TwoTierConfig> two_tier;
};

struct TenantConfig {
    std::string name;
    Sha256 key_sha256{};
    double requests_per_minute = 0;  // 0: unlimited
    double tokens_per_minute = 0;    // prompt (estimated) plus completion; 0: unlimited
    int max_concurrency = 0;         // requests in flight at once; 0: unlimited
    std::vector<std::string> models; // empty: every model
};

// Requests carrying a header with this value go to `pool`, whatever their model's route says.
struct HeaderRule {
    std::string header;
    std::string equals;
    std::string pool;
};

struct HealthConfig {
    int interval_ms = 1000;        // active checks: GET /ready (or /health) on every backend
    int timeout_ms = 500;
    int eject_after_failures = 3;  // consecutive failed checks or requests before a backend is taken out
    int scrape_interval_ms = 150;  // load-aware pools: GET /metrics this often
};

struct CacheConfig {
    bool enabled = false;
    int ttl_s = 300;
    size_t max_bytes = 64u << 20;
};

struct ListenConfig {
    std::string host = "127.0.0.1";
    int port = 8080;
    size_t max_body_bytes = 8u << 20;
    int timeout_s = 30;               // a request must arrive whole, and a response may sit unread, this long
    int upstream_timeout_s = 300;     // the longest wait for a backend's next byte
    int max_connections = 10000;
};

struct RouteConfig {
    ListenConfig listen;
    HealthConfig health;
    CacheConfig cache;
    std::vector<PoolConfig> pools;
    std::vector<ModelRoute> models;
    std::vector<TenantConfig> tenants;  // none: no key is asked for
    std::optional<Sha256> admin_key_sha256;
    std::vector<HeaderRule> header_rules;

    const PoolConfig* find_pool(std::string_view name) const;
    const ModelRoute* find_model(std::string_view name) const;
};

// Parses and checks TOML text; `source` names it in errors ("route.toml: pools.chat.backends[1]: ...").
Result<RouteConfig> parse_route_config(std::string_view text, std::string_view source);
Result<RouteConfig> load_route_config(const std::string& path);

}  // namespace tern::route
