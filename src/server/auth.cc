#include "server/auth.h"

#include <fstream>

namespace tern::server {

bool constant_time_equal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    unsigned char difference = 0;
    for (size_t idx = 0; idx < a.size(); ++idx) {
        difference |= static_cast<unsigned char>(a[idx] ^ b[idx]);
    }
    return difference == 0;
}

Result<ApiKeys> ApiKeys::from_file(const std::string& path, std::vector<std::string> more_keys) {
    std::ifstream file(path);
    if (!file) return invalid_argument("cannot read the API key file '" + path + "'");
    std::string line;
    while (std::getline(file, line)) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
        const size_t first = line.find_first_not_of(" \t");
        if (first == std::string::npos || line[first] == '#') continue;
        more_keys.push_back(line.substr(first));
    }
    if (more_keys.empty()) return invalid_argument("the API key file '" + path + "' holds no key");
    return ApiKeys(std::move(more_keys));
}

bool ApiKeys::allows(std::string_view authorization_header) const {
    if (keys_.empty()) return true;
    constexpr std::string_view kBearer = "Bearer ";
    if (!authorization_header.starts_with(kBearer)) return false;
    const std::string_view presented = authorization_header.substr(kBearer.size());
    bool allowed = false;
    for (const std::string& key : keys_) allowed |= constant_time_equal(presented, key);  // no early exit
    return allowed;
}

}  // namespace tern::server
