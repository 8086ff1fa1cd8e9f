// The request log's records: one JSON object per finished or refused request (endpoint, status, tokens, TTFT,
// TPOT, inter-token gaps, finish reason, the response id), written to stderr as a log line by tern serve and kept,
// the last few, for the dashboard's table of recent requests (/dashboard/requests).
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "server/completion_handler.h"

namespace tern::server {

nlohmann::json request_record(const std::string& endpoint, const Outcome& outcome);

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

}  // namespace tern::server
