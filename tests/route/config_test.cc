// route.toml: a full configuration is read as written, and each kind of mistake is one error that names the key path.
#include "route/config.h"

#include <gtest/gtest.h>

#include "route/tenants.h"

namespace tern::route {
namespace {

constexpr const char* kFull = R"(
[listen]
host = "0.0.0.0"
port = 9000
timeout_s = 20

[health]
interval_ms = 200
eject_after_failures = 2

[cache]
ttl_s = 60
max_bytes = 1048576

[pools.chat]
backends = ["http://127.0.0.1:8001", "127.0.0.1:8002"]
policy = "prefix_affinity"
upstream_model = "stories"

[pools.canary]
backends = ["http://127.0.0.1:8003"]

[pools.long]
backends = ["http://127.0.0.1:8004"]

[models.llama]
versions = [{ name = "stable", pool = "chat", weight = 95 }, { name = "next", pool = "canary", weight = 5 }]
long_context = { over_tokens = 2000, pool = "long" }

[models.small]
pool = "chat"

[models.tiered]
small = "canary"
large = "chat"
escalate = { below_mean_logprob = -0.8, on_length = false, refusals = ["I cannot"] }
prices = { small = 0.1, large = 1.5 }

[tenants.acme]
key_sha256 = "85dbe15d75ef9308c7ae0f33c7a324cc6f4bf519a2ed2f3027bd33c140a4f9aa"
requests_per_minute = 60
tokens_per_minute = 10000
max_concurrency = 4
models = ["llama"]

[admin]
key_sha256 = "sha256:85dbe15d75ef9308c7ae0f33c7a324cc6f4bf519a2ed2f3027bd33c140a4f9aa"

[[rules]]
header = "x-pool"
equals = "long"
pool = "long"
)";

std::string error_of(const std::string& text) {
    Result<RouteConfig> config = parse_route_config(text, "route.toml");
    return config.is_ok() ? "(parsed)" : config.status().message();
}

const char* kMinimal = "[pools.p]\nbackends = [\"http://127.0.0.1:1\"]\n[models.m]\npool = \"p\"\n";

TEST(RouteConfig, AFullConfigurationIsReadAsWritten) {
    Result<RouteConfig> parsed = parse_route_config(kFull, "route.toml");
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    const RouteConfig& config = parsed.value();
    EXPECT_EQ(config.listen.host, "0.0.0.0");
    EXPECT_EQ(config.listen.port, 9000);
    EXPECT_EQ(config.listen.timeout_s, 20);
    EXPECT_EQ(config.health.interval_ms, 200);
    EXPECT_EQ(config.health.eject_after_failures, 2);
    EXPECT_EQ(config.health.timeout_ms, HealthConfig{}.timeout_ms);
    EXPECT_TRUE(config.cache.enabled);
    EXPECT_EQ(config.cache.max_bytes, 1048576u);
    ASSERT_EQ(config.pools.size(), 3u);
    const PoolConfig* chat = config.find_pool("chat");
    ASSERT_NE(chat, nullptr);
    ASSERT_EQ(chat->backends.size(), 2u);
    EXPECT_EQ(chat->backends[1].port, 8002);
    EXPECT_EQ(chat->policy, BalancePolicy::kPrefixAffinity);
    EXPECT_EQ(chat->upstream_model, "stories");
    EXPECT_EQ(config.find_pool("canary")->policy, BalancePolicy::kLeastOutstanding);
    const ModelRoute* llama = config.find_model("llama");
    ASSERT_NE(llama, nullptr);
    ASSERT_EQ(llama->versions.size(), 2u);
    EXPECT_EQ(llama->versions[1].name, "next");
    EXPECT_EQ(llama->versions[1].weight, 5);
    EXPECT_EQ(llama->long_context_over_tokens, 2000);
    EXPECT_EQ(llama->long_context_pool, "long");
    ASSERT_EQ(config.find_model("small")->versions.size(), 1u);
    const ModelRoute* tiered = config.find_model("tiered");
    ASSERT_NE(tiered, nullptr);
    ASSERT_TRUE(tiered->two_tier.has_value());
    EXPECT_EQ(tiered->two_tier->small_pool, "canary");
    EXPECT_EQ(tiered->two_tier->large_pool, "chat");
    EXPECT_EQ(tiered->two_tier->min_mean_logprob, -0.8);
    EXPECT_FALSE(tiered->two_tier->escalate_on_length);
    EXPECT_EQ(tiered->two_tier->refusals, std::vector<std::string>{"I cannot"});
    EXPECT_EQ(tiered->two_tier->large_price_per_mtok, 1.5);
    ASSERT_EQ(tiered->versions.size(), 1u);
    EXPECT_EQ(tiered->versions[0].pool, "chat");
    ASSERT_EQ(config.tenants.size(), 1u);
    EXPECT_EQ(config.tenants[0].name, "acme");
    EXPECT_EQ(config.tenants[0].key_sha256, sha256("secret-key"));
    EXPECT_EQ(config.tenants[0].max_concurrency, 4);
    EXPECT_EQ(config.tenants[0].models, std::vector<std::string>{"llama"});
    ASSERT_TRUE(config.admin_key_sha256.has_value());
    EXPECT_EQ(*config.admin_key_sha256, sha256("secret-key"));
    ASSERT_EQ(config.header_rules.size(), 1u);
    EXPECT_EQ(config.header_rules[0].pool, "long");
}

TEST(RouteConfig, EachMistakeNamesItsKeyPath) {
    EXPECT_EQ(error_of(kMinimal), "(parsed)");
    const std::string pools = "[pools.p]\nbackends = [\"http://127.0.0.1:1\"]\n";
    const std::string models = "[models.m]\npool = \"p\"\n";
    struct Case {
        std::string text;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {"[listen]\nport = 70000\n" + pools + models, "route.toml: listen.port: 70000 is out of range"},
        {"[listen]\nprot = 1\n" + pools + models, "route.toml: listen.prot: unknown key; expected one of: host, port"},
        {"[listen]\nport = \"80\"\n" + pools + models, "route.toml: listen.port: expected an integer, got a string"},
        {models, "route.toml: pools: no pool is configured"},
        {pools, "route.toml: models: no model is configured"},
        {"[pools.p]\nbackends = [\"http://127.0.0.1:1\", \"ftp://x\"]\n" + models, "route.toml: pools.p.backends[1]: "},
        {"[pools.p]\nbackends = []\n" + models, "route.toml: pools.p.backends: expected a non-empty list"},
        {pools + "policy = \"random\"\n" + models, "route.toml: pools.p.policy: 'random' is not a policy"},
        {pools + "[models.m]\npool = \"q\"\n", "route.toml: models.m: no pool is named 'q'"},
        {pools + "[models.m]\npool = \"p\"\nversions = []\n", "route.toml: models.m: give one of 'pool', 'versions'"},
        {pools + "[models.m]\nsmall = \"p\"\n", "route.toml: models.m: a two-tier route needs both"},
        {pools + "[models.m]\nsmall = \"p\"\nlarge = \"q\"\n", "route.toml: models.m: no pool is named 'q'"},
        {pools + "[models.m]\nsmall = \"q\"\nlarge = \"p\"\n", "route.toml: models.m.small: no pool is named 'q'"},
        {pools + "[models.m]\npool = \"p\"\nprices = { small = 1 }\n", "route.toml: models.m: 'escalate' and 'prices'"},
        {pools + "[models.m]\nsmall = \"p\"\nlarge = \"p\"\nescalate = { below_mean_logprob = 1 }\n",
         "route.toml: models.m.escalate.below_mean_logprob: 1 is out of range"},
        {pools + "[models.m]\nversions = [{ name = \"a\", pool = \"p\", weight = 0 }]\n",
         "route.toml: models.m.versions: the weights must not all be 0"},
        {pools + "[models.m]\nversions = [{ name = \"a\", pool = \"p\" }, { name = \"a\", pool = \"p\" }]\n",
         "route.toml: models.m: two versions are named 'a'"},
        {pools + models + "[tenants.t]\nkey_sha256 = \"abc\"\n", "route.toml: tenants.t.key_sha256: expected the key's SHA-256"},
        {pools + models + "[tenants.t]\nkey_sha256 = \"" + std::string(64, 'a') + "\"\nmodels = [\"x\"]\n",
         "route.toml: tenants.t.models: no model is named 'x'"},
        {pools + models + "[[rules]]\nheader = \"x\"\npool = \"p\"\n", "route.toml: rules[0]: needs 'header', 'equals' and 'pool'"},
        {pools + models + "[[rules]]\nheader = \"x\"\nequals = \"y\"\npool = \"z\"\n", "route.toml: rules[0]: no pool is named 'z'"},
        {"[pools.p\n", "route.toml:1:"},
    };
    for (const Case& item : cases) {
        const std::string error = error_of(item.text);
        EXPECT_EQ(error.rfind(item.expected, 0), 0u) << "config:\n" << item.text << "\nerror: " << error;
        EXPECT_EQ(error.find('\n'), std::string::npos) << error;  // one line
    }
}

TEST(RouteConfig, AMissingFileSaysWhichOne) {
    Result<RouteConfig> config = load_route_config("/nonexistent/route.toml");
    ASSERT_FALSE(config.is_ok());
    EXPECT_NE(config.status().message().find("/nonexistent/route.toml"), std::string::npos);
}

TEST(RouteConfig, Sha256HexAcceptsBothSpellings) {
    const std::string hex = "85dbe15d75ef9308c7ae0f33c7a324cc6f4bf519a2ed2f3027bd33c140a4f9aa";
    ASSERT_TRUE(parse_sha256_hex(hex).has_value());
    EXPECT_EQ(parse_sha256_hex("sha256:" + hex), parse_sha256_hex(hex));
    EXPECT_FALSE(parse_sha256_hex(hex.substr(1)).has_value());
    EXPECT_FALSE(parse_sha256_hex(std::string(63, 'a') + "g").has_value());
}

TEST(RouteTenants, KeysAreFoundByTheirHashAndBearerIsParsed) {
    std::vector<TenantConfig> tenants(2);
    tenants[0].key_sha256 = sha256("alpha");
    tenants[1].key_sha256 = sha256("beta");
    EXPECT_EQ(find_tenant(tenants, "beta"), std::optional<size_t>(1));
    EXPECT_EQ(find_tenant(tenants, "alpha"), std::optional<size_t>(0));
    EXPECT_FALSE(find_tenant(tenants, "gamma").has_value());
    EXPECT_FALSE(find_tenant(tenants, "").has_value());
    EXPECT_EQ(bearer_key("Bearer beta"), "beta");
    EXPECT_EQ(bearer_key("bearer beta"), "beta");
    EXPECT_EQ(bearer_key("Basic xyz"), "");
    EXPECT_EQ(bearer_key("Bearer "), "");
}

}  // namespace
}  // namespace tern::route
