#include "route/tenants.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "base/check.h"

namespace tern::route {

Sha256 sha256(std::string_view data) {
    Sha256 digest{};
    unsigned int size = 0;
    TERN_CHECK(EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr) == 1 &&
               size == digest.size())
        << "SHA-256 failed";
    return digest;
}

std::string to_hex(const Sha256& hash) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string hex;
    for (uint8_t byte : hash) {
        hex += kDigits[byte >> 4];
        hex += kDigits[byte & 15];
    }
    return hex;
}

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
