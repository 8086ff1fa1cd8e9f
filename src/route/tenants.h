// API keys of tern route: each tenant's key is stored as its SHA-256 in the config, and a presented key is hashed and
// compared with every stored hash in constant time (CRYPTO_memcmp), so neither the config nor the response timing
// gives a key away.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "route/config.h"

namespace tern::route {

// The key of an "Authorization: Bearer KEY" header, or "" when the header has another form.
std::string_view bearer_key(std::string_view authorization);

// The index of the tenant whose key hash matches `key`, or nullopt. Every hash is compared, whichever matches.
std::optional<size_t> find_tenant(const std::vector<TenantConfig>& tenants, std::string_view key);

// Whether `key` hashes to `hash`, in constant time.
bool key_matches(const Sha256& hash, std::string_view key);

}  // namespace tern::route
