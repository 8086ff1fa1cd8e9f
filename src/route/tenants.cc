#include "route/tenants.h"

#include <openssl/crypto.h>

#include "base/check.h"

namespace tern::route {

std::string_view bearer_key(std::string_view authorization) {
    constexpr std::string_view kPrefix = "Bearer ";
    if (authorization.size() <= kPrefix.size()) return {};
    for (size_t idx = 0; idx < kPrefix.size(); ++idx) {
        if (std::tolower(static_cast<unsigned char>(authorization[idx])) !=
            std::tolower(static_cast<unsigned char>(kPrefix[idx]))) {
            return {};
        }
    }
    return authorization.substr(kPrefix.size());
}

bool key_matches(const Sha256& hash, std::string_view key) {
    const Sha256 presented = sha256(key);
    return CRYPTO_memcmp(presented.data(), hash.data(), hash.size()) == 0;
}

std::optional<size_t> find_tenant(const std::vector<TenantConfig>& tenants, std::string_view key) {
    const Sha256 presented = sha256(key);
    std::optional<size_t> found;
    for (size_t idx = 0; idx < tenants.size(); ++idx) {
        const bool match = CRYPTO_memcmp(presented.data(), tenants[idx].key_sha256.data(), presented.size()) == 0;
        if (match && !found) found = idx;
    }
    return found;
}

}  // namespace tern::route
