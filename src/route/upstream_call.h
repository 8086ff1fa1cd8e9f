// One HTTP/1.1 request to a backend, asynchronous on the router's upstream I/O context (Boost.Beast): the response's
// status and body bytes are handed to the caller as they arrive, never buffered whole, so an SSE stream is relayed
// chunk by chunk. cancel() closes the connection at once, which is how a backend learns that the client left and
// frees the request's KV cache.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "http/exchange.h"
#include "net/url.h"
#include "route/idle_connections.h"

namespace tern::route {

// How a call failed; kNone while it has not.
enum class UpstreamFailure {
    kNone,
    kConnect,   // could not connect (refused, unreachable, name not resolved)
    kWrite,     // the connection broke while the request was sent
    kTimeout,   // no byte for the upstream timeout
    kBroken,    // the connection broke, or the response was malformed, while it was read
    kCancelled, // cancel() was called
};
std::string_view to_string(UpstreamFailure failure);

struct UpstreamRequest {
    net::BaseUrl base;
    std::string method = "POST";
    std::string path;          // joined to base's prefix
    std::string body;
    http::Headers headers;     // besides Host, Content-Type, Content-Length and Connection
    std::chrono::seconds timeout{300};  // the longest wait for the next byte (and for the connection)
    // Where a connection that ends its call cleanly is kept for the next; null: a connection per call.
    std::shared_ptr<IdleConnections> idle;
};

// What the call reports, always on its strand, in this order: header (at most once), body bytes (any number of
// times), then done (exactly once, unless the call is dropped first).
struct UpstreamEvents {
    std::function<void(int status, std::string_view content_type)> on_header;
    std::function<void(std::string_view bytes)> on_body;
    std::function<void(UpstreamFailure failure, std::string_view detail)> on_done;
};

class UpstreamCall : public std::enable_shared_from_this<UpstreamCall> {
public:
    UpstreamCall(boost::asio::any_io_executor executor, UpstreamRequest request, UpstreamEvents events);
    // On a kept connection (from request.idle), on its executor; should the replica have closed it meanwhile, the
    // call connects afresh once before anything is reported.
    UpstreamCall(boost::asio::ip::tcp::socket kept, UpstreamRequest request, UpstreamEvents events);

    void start();  // any thread
    // Any thread: closes the connection; on_done(kCancelled) follows unless the call had finished.
    void cancel();

private:
    void send();
    void connect();
    bool reconnect_if_stale();
    void on_resolved(boost::beast::error_code error, boost::asio::ip::tcp::resolver::results_type endpoints);
    void on_connected(boost::beast::error_code error);
    void on_written(boost::beast::error_code error);
    void read_some();
    void on_read(boost::beast::error_code error);
    void finish(UpstreamFailure failure, std::string_view detail);

    UpstreamRequest request_;
    UpstreamEvents events_;
    boost::asio::ip::tcp::resolver resolver_;
    boost::beast::tcp_stream stream_;
    boost::beast::http::request<boost::beast::http::string_body> message_;
    boost::beast::flat_buffer buffer_;
    std::optional<boost::beast::http::response_parser<boost::beast::http::buffer_body>> parser_;
    std::array<char, 16 << 10> chunk_{};
    bool reused_ = false;  // on a kept connection, not yet proven alive by a byte of the answer
    bool header_seen_ = false;
    bool finished_ = false;
    bool cancelled_ = false;
};

}  // namespace tern::route
