// The last few request-log records (JSON objects), for the dashboard's table of recent requests
// (GET /dashboard/requests): tern serve keeps its request log's records here, tern route its access log's.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace tern::dashboard {

class RecentRequests {
public:
    explicit RecentRequests(size_t capacity = 100) : capacity_(capacity) {}
    // Adds `record` with "time_ms" (milliseconds since the Unix epoch), dropping the oldest past the capacity.
    void add(nlohmann::json record);
    // {"requests": [...]}, oldest first.
    std::string render() const;

private:
    size_t capacity_;
    mutable std::mutex mutex_;
    std::deque<nlohmann::json> records_;
};

}  // namespace tern::dashboard
