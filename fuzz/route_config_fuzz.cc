// tern route's configuration from anywhere (route.toml: the text an operator, or a config generator, hands the
// router, reloaded on SIGHUP while it serves). Refused with a one-line Status, or read into a configuration whose
// every reference holds: the gateway looks pools and models up without checking again.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "route/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto parsed = tern::route::parse_route_config(text, "route.toml");
    if (!parsed.is_ok()) {
        TERN_FUZZ_CHECK(parsed.status().message().rfind("route.toml", 0) == 0, "an error names the file");
        return 0;
    }
    const tern::route::RouteConfig& config = parsed.value();
    TERN_FUZZ_CHECK(!config.pools.empty() && !config.models.empty(), "pools and models");
    TERN_FUZZ_CHECK(config.listen.port >= 0 && config.listen.port <= 65535, "the port");
    for (const auto& pool : config.pools) TERN_FUZZ_CHECK(!pool.backends.empty(), "a pool has backends");
    for (const auto& model : config.models) {
        double total = 0;
        TERN_FUZZ_CHECK(!model.versions.empty(), "a model has a version");
        for (const auto& version : model.versions) {
            TERN_FUZZ_CHECK(config.find_pool(version.pool) != nullptr, "a version's pool exists");
            TERN_FUZZ_CHECK(version.weight >= 0, "weights are not negative");
            total += version.weight;
        }
        TERN_FUZZ_CHECK(total > 0, "some weight");
        if (!model.long_context_pool.empty()) {
            TERN_FUZZ_CHECK(config.find_pool(model.long_context_pool) != nullptr, "the long-context pool exists");
        }
    }
    for (const auto& rule : config.header_rules) TERN_FUZZ_CHECK(config.find_pool(rule.pool) != nullptr, "a rule's pool");
    for (const auto& tenant : config.tenants) {
        for (const auto& model : tenant.models) TERN_FUZZ_CHECK(config.find_model(model) != nullptr, "a tenant's model");
    }
    return 0;
}
