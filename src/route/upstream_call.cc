#include "route/upstream_call.h"

#include <fmt/format.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <limits>

namespace tern::route {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

}  // namespace

std::string_view to_string(UpstreamFailure failure) {
    switch (failure) {
        case UpstreamFailure::kNone: return "none";
        case UpstreamFailure::kConnect: return "connect";
        case UpstreamFailure::kWrite: return "write";
        case UpstreamFailure::kTimeout: return "timeout";
        case UpstreamFailure::kBroken: return "broken";
        case UpstreamFailure::kCancelled: return "cancelled";
    }
    return "none";
}

UpstreamCall::UpstreamCall(asio::any_io_executor executor, UpstreamRequest request, UpstreamEvents events)
    : request_(std::move(request)), events_(std::move(events)), resolver_(executor), stream_(executor) {}

UpstreamCall::UpstreamCall(asio::ip::tcp::socket kept, UpstreamRequest request, UpstreamEvents events)
    : request_(std::move(request)),
      events_(std::move(events)),
      resolver_(kept.get_executor()),
      stream_(std::move(kept)),
      reused_(true) {}

void UpstreamCall::start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->send(); });
}

void UpstreamCall::send() {
    if (cancelled_) return finish(UpstreamFailure::kCancelled, "cancelled");
    message_.method_string(request_.method);
    message_.target(request_.base.join(request_.path));
    message_.version(11);
    message_.set(bhttp::field::host, request_.base.origin().substr(request_.base.scheme.size() + 3));
    message_.set(bhttp::field::connection, request_.idle ? "keep-alive" : "close");
    for (const auto& [name, value] : request_.headers) message_.set(name, value);
    if (!request_.body.empty() || request_.method == "POST") {
        message_.set(bhttp::field::content_type, "application/json");
        message_.body() = request_.body;
        message_.prepare_payload();
    }
    parser_.emplace();
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());  // the relay streams it and bounds what it keeps
    if (!reused_) return connect();
    stream_.expires_after(request_.timeout);
    bhttp::async_write(stream_, message_, [self = shared_from_this()](beast::error_code write_error, size_t) {
        self->on_written(write_error);
    });
}

void UpstreamCall::connect() {
    stream_.expires_after(request_.timeout);
    // A replica named by its address needs no resolver, whose lookups run on a thread of their own.
    beast::error_code not_an_address;
    const asio::ip::address address = asio::ip::make_address(request_.base.host, not_an_address);
    if (!not_an_address) {
        const asio::ip::tcp::endpoint endpoint(address, static_cast<unsigned short>(request_.base.port));
        stream_.async_connect(endpoint, [self = shared_from_this()](beast::error_code error) { self->on_connected(error); });
        return;
    }
    resolver_.async_resolve(request_.base.host, std::to_string(request_.base.port),
                            [self = shared_from_this()](beast::error_code error, auto endpoints) {
                                self->on_resolved(error, std::move(endpoints));
                            });
}

void UpstreamCall::cancel() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
        if (self->finished_) return;
        self->cancelled_ = true;
        self->resolver_.cancel();
        beast::error_code ignored;
        self->stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        self->stream_.close();
    });
}

void UpstreamCall::on_resolved(beast::error_code error, asio::ip::tcp::resolver::results_type endpoints) {
    if (cancelled_) return finish(UpstreamFailure::kCancelled, "cancelled");
    if (error) return finish(UpstreamFailure::kConnect, fmt::format("cannot resolve {}: {}", request_.base.host,
                                                                    error.message()));
    stream_.async_connect(endpoints, [self = shared_from_this()](beast::error_code connect_error, const auto&) {
        self->on_connected(connect_error);
    });
}

void UpstreamCall::on_connected(beast::error_code error) {
    if (cancelled_) return finish(UpstreamFailure::kCancelled, "cancelled");
    if (error == beast::error::timeout) return finish(UpstreamFailure::kTimeout, "connect timed out");
    if (error) return finish(UpstreamFailure::kConnect, error.message());
    stream_.socket().set_option(asio::ip::tcp::no_delay(true), error);
    stream_.expires_after(request_.timeout);
    bhttp::async_write(stream_, message_, [self = shared_from_this()](beast::error_code write_error, size_t) {
        self->on_written(write_error);
    });
}

void UpstreamCall::on_written(beast::error_code error) {
    if (cancelled_) return finish(UpstreamFailure::kCancelled, "cancelled");
    if (error == beast::error::timeout) return finish(UpstreamFailure::kTimeout, "sending the request timed out");
    if (error && reconnect_if_stale()) return;
    if (error) return finish(UpstreamFailure::kWrite, error.message());
    read_some();
}

void UpstreamCall::read_some() {
    stream_.expires_after(request_.timeout);
    parser_->get().body().data = chunk_.data();
    parser_->get().body().size = chunk_.size();
    bhttp::async_read_some(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code error, size_t) {
        self->on_read(error);
    });
}

void UpstreamCall::on_read(beast::error_code error) {
    if (error == bhttp::error::need_buffer) error = {};
    if (cancelled_) return finish(UpstreamFailure::kCancelled, "cancelled");
    if (error == beast::error::timeout) return finish(UpstreamFailure::kTimeout, "no byte from the backend in time");
    if (error && !header_seen_ && reconnect_if_stale()) return;
    if (error) return finish(UpstreamFailure::kBroken, error.message());
    if (!header_seen_ && parser_->is_header_done()) {
        header_seen_ = true;
        reused_ = false;
        const auto& header = parser_->get();
        const auto content_type = header[bhttp::field::content_type];
        if (events_.on_header) events_.on_header(header.result_int(), std::string_view(content_type.data(), content_type.size()));
    }
    const size_t got = chunk_.size() - parser_->get().body().size;
    if (got > 0 && events_.on_body) events_.on_body(std::string_view(chunk_.data(), got));
    if (parser_->is_done()) return finish(UpstreamFailure::kNone, "");
    read_some();
}

// A kept connection that fails before any byte of the answer was most likely closed by the replica while it sat idle:
// the call starts again on a new connection (nothing was reported yet).
bool UpstreamCall::reconnect_if_stale() {
    if (!reused_ || cancelled_) return false;
    reused_ = false;
    beast::error_code ignored;
    stream_.socket().close(ignored);
    buffer_.consume(buffer_.size());
    parser_.emplace();
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    connect();
    return true;
}

void UpstreamCall::finish(UpstreamFailure failure, std::string_view detail) {
    if (finished_) return;
    finished_ = true;
    const bool reusable = failure == UpstreamFailure::kNone && request_.idle && parser_ && parser_->keep_alive() &&
                          buffer_.size() == 0;
    if (reusable) {
        stream_.expires_never();
        request_.idle->keep(stream_.release_socket());
    } else {
        beast::error_code ignored;
        stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        stream_.close();
    }
    // The callbacks go with this call's end: they hold the caller (a relay that holds this call), and kept they
    // would make a cycle that outlives both (LeakSanitizer found it).
    const UpstreamEvents events = std::move(events_);
    events_ = {};
    if (events.on_done) events.on_done(failure, detail);
}

}  // namespace tern::route
