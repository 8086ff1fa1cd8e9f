// Base URLs of HTTP servers ("http://127.0.0.1:8000", "http://host:8080/prefix"): parsing and joining paths.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace tern::net {

struct BaseUrl {
    std::string scheme = "http";
    std::string host;         // a name, an IPv4 address or an IPv6 address without brackets
    int port = 80;
    std::string path_prefix;  // "" or "/prefix" (no trailing slash), prepended to every request path

    // "http://host:port", with IPv6 hosts in brackets.
    std::string origin() const;
    // path_prefix + path; `path` starts with '/'.
    std::string join(std::string_view path) const;
};

// Accepts http://HOST[:PORT][/PREFIX]; a missing scheme means http. https and other schemes are kInvalidArgument
// (the bench measures servers it can reach directly; TLS would only add noise to the figures).
Result<BaseUrl> parse_base_url(std::string_view url);

}  // namespace tern::net
