// tern route's endpoints: the same API as tern serve (completions and chat completions relayed to a replica, the
// union of the models, health, readiness, metrics), with tenants' keys checked first. It never links the engine: a
// request is JSON in and bytes out, and a replica is any OpenAI-compatible server.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "dashboard/recent_requests.h"
#include "http/exchange.h"
#include "route/config.h"
#include "route/relay.h"
#include "route/route_metrics.h"
#include "route/routing.h"

namespace tern::route {

// Receives one JSON line per relayed request (the access log).
using AccessLog = std::function<void(const std::string& line)>;

class Gateway final : public http::Handler {
public:
    Gateway(RouteConfig config, AccessLog access_log);
    ~Gateway() override;  // stops the upstream I/O thread: call after the HTTP server stopped

    // Swaps in a new configuration for the next requests; those under way finish on the replicas they hold. The
    // listen settings are the process's and do not change.
    void reload(RouteConfig config);

    std::optional<http::Answer> answer_at_once(const http::Request& request) const override;
    http::RouteResult route(const http::Request& request) const override;
    // A JSON parse, a key hash and a pick: cheaper than the hand-off to a worker thread and back.
    bool routes_on_io_thread() const override { return true; }

private:
    std::shared_ptr<const Routing> routing() const;
    http::Answer models_answer(const Routing& routing) const;
    http::Answer set_weights(const Routing& routing, const http::Request& request) const;
    std::optional<http::Answer> refusal(const Routing& routing, const http::Request& request,
                                        std::optional<size_t>* tenant) const;
    struct Incoming;
    http::RouteResult relay(std::shared_ptr<const Routing> routing, const http::Request& request,
                            std::optional<size_t> tenant, std::chrono::steady_clock::time_point arrival) const;
    std::variant<Incoming, http::Answer> check(const Routing& routing, const http::Request& request,
                                               std::optional<size_t> tenant) const;
    std::optional<http::Answer> admit(const Routing& routing, const Incoming& incoming, Admission& admission) const;
    std::unique_ptr<http::PendingAnswer> start(const std::shared_ptr<const Routing>& routing, Incoming incoming,
                                               const http::Request& request, const Admission& admission,
                                               std::chrono::steady_clock::time_point arrival,
                                               const std::optional<std::string>& lead_key) const;
    std::unique_ptr<http::PendingAnswer> start_two_tier(const std::shared_ptr<const Routing>& routing, Incoming incoming,
                                                        const http::Request& request, const Admission& admission,
                                                        std::chrono::steady_clock::time_point arrival) const;
    RelayPlan make_plan(const std::shared_ptr<const Routing>& routing, Incoming& incoming,
                        const RouteDecision& decision, const Admission& admission,
                        std::chrono::steady_clock::time_point arrival) const;
    http::Answer refuse(int status, const std::string& message, const std::string& param = "") const;

    // First, so that it goes last: the replicas' kept connections (in routing_) are its sockets.
    mutable boost::asio::io_context upstream_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> upstream_work_;
    AccessLog access_log_;
    mutable std::mutex routing_mutex_;
    std::shared_ptr<const Routing> routing_;
    mutable RouteMetrics metrics_;
    mutable dashboard::RecentRequests recent_;  // the access log's last records, for /dashboard
    std::thread upstream_thread_;
};

// The text of a completions prompt or of chat messages' contents, for the length estimate and prefix affinity.
std::string prompt_text(const nlohmann::json& body);

}  // namespace tern::route
