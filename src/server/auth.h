// API keys: "Authorization: Bearer KEY" checked against every configured key in constant time, so response timing
// tells nothing about how much of a guess was right.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tern::server {

class ApiKeys {
public:
    ApiKeys() = default;
    explicit ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {}
    // One key a line; blank lines and lines starting with '#' are skipped.
    static Result<ApiKeys> from_file(const std::string& path, std::vector<std::string> more_keys);

    bool enabled() const { return !keys_.empty(); }
    // Whether an Authorization header value grants access (always, when no key is configured).
    bool allows(std::string_view authorization_header) const;

private:
    std::vector<std::string> keys_;
};

// Compares without an early exit on the first differing byte (the length is not hidden).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace tern::server
