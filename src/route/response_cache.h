// Answers kept for repeats: an exact match on the canonical request (the tenant, the endpoint, and the whole body
// with its keys sorted: model, prompt or messages, every sampling field) when the answer is deterministic
// (temperature 0, or a seed given). Bounded by a TTL and by bytes, least recently used first out. A stream's answer
// is kept as its events and replayed as SSE; one tenant never gets another's answer, since the tenant is in the key.
#pragma once

#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "route/config.h"

namespace tern::route {

// A complete answer as the client got it.
struct Recording {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;                 // a whole answer
    std::vector<std::string> events;  // a stream's event data, [DONE] included
    bool streamed = false;

    size_t bytes() const;
};

// The key of a request whose answer may be reused, or nullopt when it may not (sampling without a seed).
std::optional<std::string> cache_key(const nlohmann::json& body, std::string_view path, std::string_view tenant);

class ResponseCache {
public:
    using Clock = std::chrono::steady_clock;
    explicit ResponseCache(CacheConfig config) : config_(config) {}

    std::shared_ptr<const Recording> find(const std::string& key, Clock::time_point now);
    // Keeps `recording` (evicting the least recently used beyond max_bytes); one larger than max_bytes is not kept.
    void store(const std::string& key, std::shared_ptr<const Recording> recording, Clock::time_point now);
    size_t bytes() const;
    size_t entries() const;

private:
    struct Entry {
        std::string key;
        std::shared_ptr<const Recording> recording;
        Clock::time_point expires;
        size_t bytes = 0;
    };
    void erase(std::list<Entry>::iterator entry);

    CacheConfig config_;
    mutable std::mutex mutex_;
    std::list<Entry> lru_;  // most recently used first
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
    size_t bytes_ = 0;
};

}  // namespace tern::route
