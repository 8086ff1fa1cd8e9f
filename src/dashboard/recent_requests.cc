#include "dashboard/recent_requests.h"

#include <chrono>

namespace tern::dashboard {

void RecentRequests::add(nlohmann::json record) {
    record["time_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    std::lock_guard lock(mutex_);
    records_.push_back(std::move(record));
    while (records_.size() > capacity_) records_.pop_front();
}

std::string RecentRequests::render() const {
    nlohmann::json requests = nlohmann::json::array();
    {
        std::lock_guard lock(mutex_);
        for (const nlohmann::json& record : records_) requests.push_back(record);
    }
    return nlohmann::json{{"requests", requests}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tern::dashboard
