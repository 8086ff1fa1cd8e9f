// A client request relayed to a replica: the http::PendingAnswer that tern route's HTTP sessions poll. The upstream
// response's status decides how the client is answered (an SSE stream relayed event by event, or a whole body);
// a call that fails before the response's first byte (connection refused, 5xx) is retried once on another replica;
// a stream that breaks midway ends with an SSE error event; a client that leaves cancels the upstream call at once.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http/exchange.h"
#include "route/replica.h"
#include "route/response_cache.h"
#include "route/upstream_call.h"

namespace tern::route {

// How a relayed request ended, for the access log and the metrics.
struct RelayResult {
    int status = 0;                 // what the client got (499: it left first)
    std::string replica;            // the origin of the replica that answered, or tried last
    int attempts = 0;
    UpstreamFailure failure = UpstreamFailure::kNone;  // of the last attempt
    std::string failure_detail;
    bool streamed = false;
    double ttft_ms = -1;            // to the first streamed event (or the whole body), from the request's arrival
    double total_ms = 0;
    size_t response_bytes = 0;
    double usage_tokens = -1;       // total_tokens of the usage the replica reported; -1 when none came
};

struct RelayPlan {
    std::string request_id;         // answered back in x-request-id
    std::string path;
    std::string body;
    http::Headers headers;          // passed to the replica (x-request-id, ...)
    bool client_wants_stream = false;
    // The router asked for stream_options.include_usage on the client's behalf: the usage chunk is read and dropped.
    bool strip_usage_chunk = false;
    std::chrono::steady_clock::time_point arrival;
    std::chrono::seconds upstream_timeout{300};
    size_t max_whole_bytes = 64 << 20;  // a whole answer larger than this is refused (502)
    int max_attempts = 2;
    // The replica for the next attempt, not one of `tried`; null when none is left.
    std::function<std::shared_ptr<Replica>(const std::vector<const Replica*>& tried)> pick;
    // Called once, on the client session's strand, when the answer went out or the client left.
    std::function<void(const RelayResult& result)> on_delivered;
    // Called once when the answer is complete (before the client has all of it): with the whole answer when it
    // succeeded (200, a stream that reached [DONE]), null when it failed or the client left. Set, the relay keeps a
    // copy of what it relays.
    std::function<void(std::shared_ptr<const Recording> recording)> on_complete;
};

class Relay;

class RelayJob final : public http::PendingAnswer {
public:
    // Starts the first attempt on `upstream` (the router's upstream I/O context).
    RelayJob(boost::asio::io_context& upstream, RelayPlan plan, std::shared_ptr<Replica> first);
    ~RelayJob() override;

    http::Delivery delivery() const override;
    void set_listener(const std::function<void()>& listener) override;
    bool poll(std::vector<std::string>& events) override;
    void client_gone() override;
    http::Answer whole_answer() const override;
    http::Headers stream_headers() const override;
    void delivered() override;

private:
    std::shared_ptr<Relay> relay_;
};

}  // namespace tern::route
