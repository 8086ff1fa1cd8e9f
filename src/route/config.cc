#include "route/config.h"

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

#include "route/config_reader.h"

namespace tern::route {
namespace {

const toml::table* table_at(ConfigReader& reader, const toml::table& parent, std::string_view path,
                            std::string_view key) {
    const toml::node* node = parent.get(key);
    if (node == nullptr) return nullptr;
    if (const auto* table = node->as_table()) return table;
    reader.fail(ConfigReader::join(path, key), fmt::format("expected a table, got {}", describe(node->type())));
    return nullptr;
}

// Calls `read(path, name, table)` for each entry of the table root[key] ([pools.NAME], [models.NAME], ...), each of
// which must be a table (`shape` says what it should hold). Returns false when root[key] is absent or empty.
template <typename Read>
bool for_each_named_table(ConfigReader& reader, const toml::table& root, std::string_view key, std::string_view shape,
                          Read read) {
    const toml::table* table = table_at(reader, root, "", key);
    if (table == nullptr || table->empty()) return false;
    for (const auto& [name, node] : *table) {
        const std::string path = ConfigReader::join(key, name.str());
        const toml::table* entry = node.as_table();
        if (entry == nullptr) {
            reader.fail(path, fmt::format("expected a table with {}", shape));
            return true;
        }
        read(path, std::string(name.str()), *entry);
    }
    return true;
}

void read_listen(ConfigReader& reader, const toml::table& root, ListenConfig& listen) {
    const toml::table* table = table_at(reader, root, "", "listen");
    if (table == nullptr) return;
    reader.allow_only(*table, "listen", {"host", "port", "max_body_bytes", "timeout_s", "upstream_timeout_s",
                                         "max_connections"});
    reader.read(*table, "listen", "host", listen.host);
    reader.read(*table, "listen", "port", listen.port, 0, 65535);
    int64_t body = static_cast<int64_t>(listen.max_body_bytes);
    reader.read(*table, "listen", "max_body_bytes", body, 1024, int64_t{1} << 34);
    listen.max_body_bytes = static_cast<size_t>(body);
    reader.read(*table, "listen", "timeout_s", listen.timeout_s, 1, 3600);
    reader.read(*table, "listen", "upstream_timeout_s", listen.upstream_timeout_s, 1, 86400);
    reader.read(*table, "listen", "max_connections", listen.max_connections, 1, 1000000);
}

void read_health(ConfigReader& reader, const toml::table& root, HealthConfig& health) {
    const toml::table* table = table_at(reader, root, "", "health");
    if (table == nullptr) return;
    reader.allow_only(*table, "health", {"interval_ms", "timeout_ms", "eject_after_failures", "scrape_interval_ms"});
    reader.read(*table, "health", "interval_ms", health.interval_ms, 10, 3600000);
    reader.read(*table, "health", "timeout_ms", health.timeout_ms, 1, 600000);
    reader.read(*table, "health", "eject_after_failures", health.eject_after_failures, 1, 1000);
    reader.read(*table, "health", "scrape_interval_ms", health.scrape_interval_ms, 10, 3600000);
}

void read_cache(ConfigReader& reader, const toml::table& root, CacheConfig& cache) {
    const toml::table* table = table_at(reader, root, "", "cache");
    if (table == nullptr) return;
    reader.allow_only(*table, "cache", {"enabled", "ttl_s", "max_bytes"});
    cache.enabled = true;  // a [cache] table turns it on unless it says otherwise
    reader.read(*table, "cache", "enabled", cache.enabled);
    reader.read(*table, "cache", "ttl_s", cache.ttl_s, 1, 86400 * 365);
    int64_t bytes = static_cast<int64_t>(cache.max_bytes);
    reader.read(*table, "cache", "max_bytes", bytes, 0, int64_t{1} << 40);
    cache.max_bytes = static_cast<size_t>(bytes);
}

std::optional<BalancePolicy> parse_policy(std::string_view text) {
    for (BalancePolicy policy : {BalancePolicy::kLeastOutstanding, BalancePolicy::kLoadAware,
                                 BalancePolicy::kPrefixAffinity, BalancePolicy::kRoundRobin}) {
        if (to_string(policy) == text) return policy;
    }
    return std::nullopt;
}

void read_pool(ConfigReader& reader, const std::string& path, const toml::table& table, PoolConfig& pool) {
    reader.allow_only(table, path, {"backends", "policy", "upstream_model"});
    const toml::node* backends = table.get("backends");
    const toml::array* list = backends != nullptr ? backends->as_array() : nullptr;
    if (list == nullptr || list->empty()) {
        return reader.fail(ConfigReader::join(path, "backends"),
                           "expected a non-empty list of backend URLs, e.g. [\"http://127.0.0.1:8001\"]");
    }
    for (size_t idx = 0; idx < list->size(); ++idx) {
        const std::string item_path = ConfigReader::index(ConfigReader::join(path, "backends"), idx);
        const auto* text = (*list)[idx].as_string();
        if (text == nullptr) return reader.fail(item_path, "expected a URL string");
        Result<net::BaseUrl> url = net::parse_base_url(text->get());
        if (!url.is_ok()) return reader.fail(item_path, url.status().message());
        pool.backends.push_back(std::move(url.value()));
    }
    std::string policy(to_string(pool.policy));
    reader.read(table, path, "policy", policy);
    if (auto parsed = parse_policy(policy)) {
        pool.policy = *parsed;
    } else {
        reader.fail(ConfigReader::join(path, "policy"),
                    fmt::format("'{}' is not a policy; expected least_outstanding, load_aware, prefix_affinity or "
                                "round_robin", policy));
    }
    reader.read(table, path, "upstream_model", pool.upstream_model);
}

void read_pools(ConfigReader& reader, const toml::table& root, std::vector<PoolConfig>& pools) {
    const bool any = for_each_named_table(reader, root, "pools", "'backends'",
                                          [&](const std::string& path, std::string name, const toml::table& table) {
                                              PoolConfig pool{.name = std::move(name)};
                                              read_pool(reader, path, table, pool);
                                              pools.push_back(std::move(pool));
                                          });
    if (!any) {
        reader.fail("pools", "no pool is configured; add one, e.g. [pools.main] backends = [\"http://127.0.0.1:8001\"]");
    }
}

void read_versions(ConfigReader& reader, const std::string& path, const toml::table& table, ModelRoute& model) {
    const toml::node* node = table.get("versions");
    const toml::array* list = node != nullptr ? node->as_array() : nullptr;
    if (list == nullptr || list->empty()) {
        return reader.fail(ConfigReader::join(path, "versions"), "expected a non-empty list of {name, pool, weight}");
    }
    for (size_t idx = 0; idx < list->size(); ++idx) {
        const std::string item_path = ConfigReader::index(ConfigReader::join(path, "versions"), idx);
        const toml::table* item = (*list)[idx].as_table();
        if (item == nullptr) return reader.fail(item_path, "expected a table {name, pool, weight}");
        reader.allow_only(*item, item_path, {"name", "pool", "weight"});
        ModelVersion version;
        reader.read(*item, item_path, "name", version.name);
        reader.read(*item, item_path, "pool", version.pool);
        reader.read(*item, item_path, "weight", version.weight, 0, 1e9);
        if (version.name.empty()) reader.fail(ConfigReader::join(item_path, "name"), "each version needs a name");
        model.versions.push_back(std::move(version));
    }
}

void read_two_tier(ConfigReader& reader, const std::string& path, const toml::table& table, ModelRoute& model) {
    TwoTierConfig tiers;
    reader.read(table, path, "small", tiers.small_pool);
    reader.read(table, path, "large", tiers.large_pool);
    if (tiers.small_pool.empty() || tiers.large_pool.empty()) {
        return reader.fail(path, "a two-tier route needs both 'small' and 'large' pools");
    }
    if (const toml::table* escalate = table_at(reader, table, path, "escalate")) {
        const std::string escalate_path = ConfigReader::join(path, "escalate");
        reader.allow_only(*escalate, escalate_path, {"below_mean_logprob", "on_length", "refusals"});
        reader.read(*escalate, escalate_path, "below_mean_logprob", tiers.min_mean_logprob, -1e9, 0);
        reader.read(*escalate, escalate_path, "on_length", tiers.escalate_on_length);
        reader.read(*escalate, escalate_path, "refusals", tiers.refusals);
    }
    if (const toml::table* prices = table_at(reader, table, path, "prices")) {
        const std::string prices_path = ConfigReader::join(path, "prices");
        reader.allow_only(*prices, prices_path, {"small", "large"});
        reader.read(*prices, prices_path, "small", tiers.small_price_per_mtok, 0, 1e9);
        reader.read(*prices, prices_path, "large", tiers.large_price_per_mtok, 0, 1e9);
    }
    model.versions.push_back(ModelVersion{.pool = tiers.large_pool});
    model.two_tier = std::move(tiers);
}

void read_model(ConfigReader& reader, const std::string& path, const toml::table& table, ModelRoute& model) {
    reader.allow_only(table, path, {"pool", "versions", "long_context", "small", "large", "escalate", "prices"});
    const int kinds = static_cast<int>(table.contains("pool")) + static_cast<int>(table.contains("versions")) +
                      static_cast<int>(table.contains("small") || table.contains("large"));
    if (kinds != 1) {
        return reader.fail(path, "give one of 'pool', 'versions' (a canary) or 'small' and 'large' (two tiers)");
    }
    if (table.contains("pool")) {
        ModelVersion version;
        reader.read(table, path, "pool", version.pool);
        model.versions.push_back(std::move(version));
    } else if (table.contains("versions")) {
        read_versions(reader, path, table, model);
    } else {
        read_two_tier(reader, path, table, model);
    }
    if (!model.two_tier && (table.contains("escalate") || table.contains("prices"))) {
        reader.fail(path, "'escalate' and 'prices' belong to a two-tier route (with 'small' and 'large')");
    }
    if (const toml::table* long_context = table_at(reader, table, path, "long_context")) {
        const std::string long_path = ConfigReader::join(path, "long_context");
        reader.allow_only(*long_context, long_path, {"over_tokens", "pool"});
        reader.read(*long_context, long_path, "over_tokens", model.long_context_over_tokens, 1, int64_t{1} << 40);
        reader.read(*long_context, long_path, "pool", model.long_context_pool);
        if (model.long_context_over_tokens == 0 || model.long_context_pool.empty()) {
            reader.fail(long_path, "needs both 'over_tokens' and 'pool'");
        }
    }
}

void read_models(ConfigReader& reader, const toml::table& root, std::vector<ModelRoute>& models) {
    const bool any = for_each_named_table(reader, root, "models", "'pool' or 'versions'",
                                          [&](const std::string& path, std::string name, const toml::table& table) {
                                              ModelRoute model{.name = std::move(name)};
                                              read_model(reader, path, table, model);
                                              models.push_back(std::move(model));
                                          });
    if (!any) reader.fail("models", "no model is configured; add one, e.g. [models.llama] pool = \"main\"");
}

std::optional<Sha256> read_key_hash(ConfigReader& reader, const std::string& path, const toml::table& table) {
    std::string text;
    reader.read(table, path, "key_sha256", text);
    std::optional<Sha256> hash = parse_sha256_hex(text);
    if (!hash) {
        reader.fail(ConfigReader::join(path, "key_sha256"),
                    "expected the key's SHA-256 as 64 hex digits (make one with: printf %s KEY | sha256sum)");
    }
    return hash;
}

void read_tenant(ConfigReader& reader, const std::string& path, const toml::table& table, TenantConfig& tenant) {
    reader.allow_only(table, path, {"key_sha256", "requests_per_minute", "tokens_per_minute", "max_concurrency",
                                    "models"});
    if (auto hash = read_key_hash(reader, path, table)) tenant.key_sha256 = *hash;
    reader.read(table, path, "requests_per_minute", tenant.requests_per_minute, 0, 1e12);
    reader.read(table, path, "tokens_per_minute", tenant.tokens_per_minute, 0, 1e15);
    reader.read(table, path, "max_concurrency", tenant.max_concurrency, 0, 1000000);
    reader.read(table, path, "models", tenant.models);
}

void read_tenants(ConfigReader& reader, const toml::table& root, std::vector<TenantConfig>& tenants) {
    for_each_named_table(reader, root, "tenants", "'key_sha256'",
                         [&](const std::string& path, std::string name, const toml::table& table) {
                             TenantConfig tenant{.name = std::move(name)};
                             read_tenant(reader, path, table, tenant);
                             tenants.push_back(std::move(tenant));
                         });
}

void read_rules(ConfigReader& reader, const toml::table& root, std::vector<HeaderRule>& rules) {
    const toml::node* node = root.get("rules");
    if (node == nullptr) return;
    const toml::array* list = node->as_array();
    if (list == nullptr) return reader.fail("rules", "expected [[rules]] tables with header, equals and pool");
    for (size_t idx = 0; idx < list->size(); ++idx) {
        const std::string path = ConfigReader::index("rules", idx);
        const toml::table* table = (*list)[idx].as_table();
        if (table == nullptr) return reader.fail(path, "expected a table with header, equals and pool");
        reader.allow_only(*table, path, {"header", "equals", "pool"});
        HeaderRule rule;
        reader.read(*table, path, "header", rule.header);
        reader.read(*table, path, "equals", rule.equals);
        reader.read(*table, path, "pool", rule.pool);
        if (rule.header.empty() || rule.equals.empty() || rule.pool.empty()) reader.fail(path, "needs 'header', 'equals' and 'pool'");
        rules.push_back(std::move(rule));
    }
}

// Names that must exist: every pool a model, a long-context route or a rule points at; every model a tenant names.
void check_references(ConfigReader& reader, const RouteConfig& config) {
    auto need_pool = [&](const std::string& path, const std::string& pool) {
        if (config.find_pool(pool) == nullptr) reader.fail(path, fmt::format("no pool is named '{}'", pool));
    };
    for (const ModelRoute& model : config.models) {
        const std::string path = ConfigReader::join("models", model.name);
        double total = 0;
        std::set<std::string> names;
        for (const ModelVersion& version : model.versions) {
            need_pool(path, version.pool);
            total += version.weight;
            if (!names.insert(version.name).second) reader.fail(path, fmt::format("two versions are named '{}'", version.name));
        }
        if (total <= 0) reader.fail(ConfigReader::join(path, "versions"), "the weights must not all be 0");
        if (!model.long_context_pool.empty()) need_pool(ConfigReader::join(path, "long_context"), model.long_context_pool);
        if (model.two_tier) need_pool(ConfigReader::join(path, "small"), model.two_tier->small_pool);
    }
    for (size_t idx = 0; idx < config.header_rules.size(); ++idx) {
        need_pool(ConfigReader::index("rules", idx), config.header_rules[idx].pool);
    }
    for (const TenantConfig& tenant : config.tenants) {
        for (const std::string& model : tenant.models) {
            if (config.find_model(model) == nullptr) {
                reader.fail(ConfigReader::join(ConfigReader::join("tenants", tenant.name), "models"),
                            fmt::format("no model is named '{}'", model));
            }
        }
    }
}

}  // namespace

std::string_view to_string(BalancePolicy policy) {
    switch (policy) {
        case BalancePolicy::kLeastOutstanding: return "least_outstanding";
        case BalancePolicy::kLoadAware: return "load_aware";
        case BalancePolicy::kPrefixAffinity: return "prefix_affinity";
        case BalancePolicy::kRoundRobin: return "round_robin";
    }
    return "least_outstanding";
}

const PoolConfig* RouteConfig::find_pool(std::string_view name) const {
    for (const PoolConfig& pool : pools) {
        if (pool.name == name) return &pool;
    }
    return nullptr;
}

const ModelRoute* RouteConfig::find_model(std::string_view name) const {
    for (const ModelRoute& model : models) {
        if (model.name == name) return &model;
    }
    return nullptr;
}

Result<RouteConfig> parse_route_config(std::string_view text, std::string_view source) {
    toml::table root;
    try {
        root = toml::parse(text, source);
    } catch (const toml::parse_error& error) {
        return invalid_argument(fmt::format("{}:{}:{}: {}", source, error.source().begin.line,
                                            error.source().begin.column, error.description()));
    }
    ConfigReader reader{std::string(source)};
    reader.allow_only(root, "", {"listen", "health", "cache", "pools", "models", "tenants", "admin", "rules"});
    RouteConfig config;
    read_listen(reader, root, config.listen);
    read_health(reader, root, config.health);
    read_cache(reader, root, config.cache);
    read_pools(reader, root, config.pools);
    read_models(reader, root, config.models);
    read_tenants(reader, root, config.tenants);
    if (const toml::table* admin = table_at(reader, root, "", "admin")) {
        reader.allow_only(*admin, "admin", {"key_sha256"});
        config.admin_key_sha256 = read_key_hash(reader, "admin", *admin);
    }
    read_rules(reader, root, config.header_rules);
    if (!reader.failed()) check_references(reader, config);
    if (reader.failed()) return reader.status();
    return config;
}

Result<RouteConfig> load_route_config(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) return not_found(fmt::format("cannot read the route config '{}': no such file, or not readable", path));
    std::ostringstream text;
    text << file.rdbuf();
    return parse_route_config(text.str(), path);
}

}  // namespace tern::route
