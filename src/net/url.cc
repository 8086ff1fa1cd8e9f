#include "net/url.h"

#include <fmt/format.h>

#include <charconv>

namespace tern::net {

std::string BaseUrl::origin() const {
    const bool ipv6 = host.find(':') != std::string::npos;
    return fmt::format("{}://{}{}{}:{}", scheme, ipv6 ? "[" : "", host, ipv6 ? "]" : "", port);
}

std::string BaseUrl::join(std::string_view path) const {
    std::string out = path_prefix;
    if (path.empty() || path.front() != '/') out += '/';
    out.append(path);
    return out;
}

Result<BaseUrl> parse_base_url(std::string_view url) {
    BaseUrl base;
    std::string_view rest = url;
    const size_t scheme_end = rest.find("://");
    if (scheme_end != std::string_view::npos) {
        base.scheme = std::string(rest.substr(0, scheme_end));
        rest.remove_prefix(scheme_end + 3);
    }
    if (base.scheme != "http") {
        return invalid_argument(fmt::format("'{}': only http:// URLs are supported", url));
    }
    const size_t path_start = rest.find('/');
    std::string_view authority = rest.substr(0, path_start);
    std::string_view path = path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
    std::string_view port_text;
    if (!authority.empty() && authority.front() == '[') {
        const size_t close = authority.find(']');
        if (close == std::string_view::npos) return invalid_argument(fmt::format("'{}': unclosed '[' in host", url));
        base.host = std::string(authority.substr(1, close - 1));
        std::string_view after = authority.substr(close + 1);
        if (!after.empty() && after.front() != ':') return invalid_argument(fmt::format("'{}': bad host", url));
        if (!after.empty()) port_text = after.substr(1);
    } else {
        const size_t colon = authority.rfind(':');
        base.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    }
    if (base.host.empty()) return invalid_argument(fmt::format("'{}': the URL has no host", url));
    if (!port_text.empty()) {
        const auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), base.port);
        if (error != std::errc() || end != port_text.data() + port_text.size() || base.port < 1 || base.port > 65535) {
            return invalid_argument(fmt::format("'{}': the port must be a number in 1..65535", url));
        }
    }
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    base.path_prefix = std::string(path);
    return base;
}

}  // namespace tern::net
