// The pending-answer half of Session: what the producer makes goes to the client as it comes (a whole body once
// finished, or SSE chunks), and the socket is watched meanwhile for a client that left.
#include <fmt/format.h>
#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>

#include "base/log.h"
#include "http/session.h"

namespace tern::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;

std::string chunk(std::string_view data) { return fmt::format("{:x}\r\n{}\r\n", data.size(), data); }

constexpr std::string_view kStreamHeader =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace

void Session::start_job(std::unique_ptr<PendingAnswer> job) {
    if (closing_) {  // the client left while the request was prepared
        job->client_gone();
        job->delivered();
        return;
    }
    job_ = std::move(job);
    job_done_ = false;
    stream_started_ = false;
    // Called on the producer's thread: it only posts. A weak reference, so that a listener call never keeps the
    // session (and the destruction of its job, which clears this listener) on that thread.
    job_->set_listener([weak = weak_from_this()] {
        if (auto self = weak.lock()) self->schedule_pump();
    });
    watch_peer();
    pump();
}

// The SSE response header goes out once the answer is known to be a stream: at once for a generation, after the
// upstream's header for a relayed call.
void Session::start_stream() {
    stream_started_ = true;
    limit_kernel_send_buffer();
    std::string header(kStreamHeader);
    for (const auto& [name, value] : job_->stream_headers()) header += fmt::format("{}: {}\r\n", name, value);
    unsent_ = fmt::format("{}Connection: {}\r\n\r\n", header, keep_alive_ ? "keep-alive" : "close");
}

// A stream's events come at token rate (kilobytes a second), so a small kernel buffer costs it nothing; left to
// autotuning, a client that never reads let the kernel hold 4 MB per connection (seen on loopback: the send buffer
// grew to 3.9 MB, Send-Q past 490 KB after 4 s and rising), memory outside --max-unsent-bytes. The kernel doubles
// the value asked for.
void Session::limit_kernel_send_buffer() {
    const int bytes = 64 << 10;
    ::setsockopt(stream_.socket().native_handle(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
}

void Session::schedule_pump() {
    if (pump_posted_.exchange(true)) return;  // one pending pump takes every output that arrived meanwhile
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->pump(); });
}

void Session::pump() {
    pump_posted_.store(false);
    if (!job_ || job_done_) return;
    std::vector<std::string> events;
    job_done_ = job_->poll(events);
    const Delivery delivery = job_->delivery();
    if (delivery != Delivery::kStream) {
        if (job_done_) finish_job();
        return;
    }
    if (!stream_started_) start_stream();
    for (const std::string& event : events) unsent_ += chunk("data: " + event + "\n\n");
    if (job_done_) unsent_ += kLastChunk;
    if (unsent_.size() > host_.options().max_unsent_bytes) return client_gone("reads its stream too slowly");
    write_pending();
}

void Session::write_pending() {
    if (writing_ || unsent_.empty() || closing_) return;
    in_flight_.swap(unsent_);
    unsent_.clear();
    writing_ = true;
    stream_.expires_after(std::chrono::seconds(host_.options().write_timeout_s));
    asio::async_write(stream_, asio::buffer(in_flight_), [self = shared_from_this()](beast::error_code error, size_t) {
        self->on_chunk_written(error);
    });
}

void Session::on_chunk_written(beast::error_code error) {
    writing_ = false;
    in_flight_.clear();
    if (error) return client_gone("stopped reading (write failed or timed out)");
    if (!unsent_.empty()) return write_pending();
    if (job_done_) finish_job();
}

// The producer finished and (streamed) everything is written: log, release the producer, then the whole answer or
// the next request.
void Session::finish_job() {
    const bool streamed = stream_started_;
    std::optional<Answer> whole;
    if (!streamed) whole = job_->whole_answer();
    job_->delivered();
    job_.reset();
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // ends the peer watch
    if (!streamed) return answer(std::move(*whole));
    stream_.expires_never();
    if (!keep_alive_) return close();
    read_header();
}

// Waits for the socket to turn readable: with nothing to read there, that is the peer closing (or resetting) it.
void Session::watch_peer() {
    if (watching_peer_ || closing_) return;
    watching_peer_ = true;
    stream_.socket().async_wait(asio::ip::tcp::socket::wait_read,
                                [self = shared_from_this()](beast::error_code error) { self->on_peer_readable(error); });
}

void Session::on_peer_readable(beast::error_code error) {
    watching_peer_ = false;
    if (error == asio::error::operation_aborted || !job_ || job_done_) return;
    if (error) return client_gone("connection error");
    char byte = 0;
    const ssize_t peeked = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (peeked == 0) return client_gone("closed the connection");
    if (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return watch_peer();
    if (peeked < 0) return client_gone("connection error");
    // Bytes of a next (pipelined) request: the client is there. They stay in the socket for read_header().
}

// The producer's work is cancelled at once (an engine frees its KV within a step, a relay closes its upstream) and
// the connection closed.
void Session::client_gone(const char* why) {
    if (job_) {
        log_debug("client {}: request cancelled", why);
        job_->client_gone();
        job_->delivered();
        job_.reset();
    }
    close();
}

}  // namespace tern::http
