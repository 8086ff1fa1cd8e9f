#include "route/response_cache.h"

#include <xxhash.h>

#include <fmt/format.h>

namespace tern::route {

size_t Recording::bytes() const {
    size_t total = sizeof(Recording) + body.size() + content_type.size();
    for (const std::string& event : events) total += event.size() + sizeof(std::string);
    return total;
}

std::optional<std::string> cache_key(const nlohmann::json& body, std::string_view path, std::string_view tenant) {
    const auto temperature = body.find("temperature");
    const bool greedy = temperature != body.end() && temperature->is_number() && temperature->get<double>() == 0;
    const auto seed = body.find("seed");
    const bool seeded = seed != body.end() && seed->is_number_integer();
    if (!greedy && !seeded) return std::nullopt;
    // nlohmann's objects are ordered maps: dump() writes every level's keys sorted, the canonical form.
    const std::string canonical = fmt::format("{}\n{}\n{}", tenant, path, body.dump());
    const XXH128_hash_t hash = XXH3_128bits(canonical.data(), canonical.size());
    // The hash indexes; the canonical text is the key, so a collision cannot serve another request's answer.
    return fmt::format("{:016x}{:016x}\n{}", hash.high64, hash.low64, canonical);
}

std::shared_ptr<const Recording> ResponseCache::find(const std::string& key, Clock::time_point now) {
    std::lock_guard lock(mutex_);
    auto found = index_.find(key);
    if (found == index_.end()) return nullptr;
    if (found->second->expires <= now) {
        erase(found->second);
        return nullptr;
    }
    lru_.splice(lru_.begin(), lru_, found->second);
    return found->second->recording;
}

void ResponseCache::store(const std::string& key, std::shared_ptr<const Recording> recording, Clock::time_point now) {
    const size_t size = recording->bytes() + key.size();
    if (!config_.enabled || size > config_.max_bytes) return;
    std::lock_guard lock(mutex_);
    if (auto found = index_.find(key); found != index_.end()) erase(found->second);
    lru_.push_front(Entry{key, std::move(recording), now + std::chrono::seconds(config_.ttl_s), size});
    index_[key] = lru_.begin();
    bytes_ += size;
    while (bytes_ > config_.max_bytes) erase(std::prev(lru_.end()));
}

void ResponseCache::erase(std::list<Entry>::iterator entry) {
    bytes_ -= entry->bytes;
    index_.erase(entry->key);
    lru_.erase(entry);
}

size_t ResponseCache::bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
}

size_t ResponseCache::entries() const {
    std::lock_guard lock(mutex_);
    return index_.size();
}

}  // namespace tern::route
