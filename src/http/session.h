// One client connection of the HTTP server: reads requests one after another (keep-alive), answers them, and for a
// pending answer writes its output as it comes (a whole body, or SSE chunks) while it watches the socket, so that a
// client that goes away cancels the work at once. Everything a session does runs on its strand.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/server.h"

namespace tern::http {

// What a session needs from its server.
class SessionHost {
public:
    virtual ~SessionHost() = default;
    virtual const ServerOptions& options() const = 0;
    virtual const Handler& handler() const = 0;
    virtual void run_on_worker(std::function<void()> work) = 0;
    virtual bool stopping() const = 0;
    virtual void session_closed(class Session* session) = 0;
};

class Session : public std::enable_shared_from_this<Session> {
public:
    Session(boost::asio::ip::tcp::socket socket, SessionHost& host);
    ~Session();

    void start();
    boost::asio::any_io_executor executor() { return stream_.get_executor(); }
    // From the server's stop(): an idle connection closes now, one with a response under way after it.
    void shut_down();
    // After the I/O threads are joined: drops the pending answer (and its listener) on the calling thread.
    void drop_job();

private:
    using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

    void read_header();
    void on_header(boost::beast::error_code error);
    void read_body();
    void on_request(boost::beast::error_code error);
    void answer_read_error(boost::beast::error_code error);
    void dispatch(Request request);
    RouteResult route_safely(const Request& request) const;  // a handler's exception becomes a 500
    void take_result(RouteResult result);                    // on the strand: answer, or start the job
    void answer(Answer answer);
    void on_written(bool keep_alive, boost::beast::error_code error);
    void linger_then_close();
    void discard_input(size_t budget);

    // session_job.cc: a pending answer.
    void start_job(std::unique_ptr<PendingAnswer> job);
    void start_stream();
    void limit_kernel_send_buffer();
    void schedule_pump();
    void pump();
    void write_pending();
    void on_chunk_written(boost::beast::error_code error);
    void finish_job();
    void watch_peer();
    void on_peer_readable(boost::beast::error_code error);
    void client_gone(const char* why);
    void close();

    boost::beast::tcp_stream stream_;
    SessionHost& host_;
    boost::beast::flat_buffer buffer_;
    std::optional<Parser> parser_;
    bool keep_alive_ = false;
    bool closing_ = false;
    bool request_unread_ = false;    // answered before the request was read whole: linger before closing
    std::vector<char> discard_;      // what a lingering connection reads, thrown away

    std::unique_ptr<PendingAnswer> job_;
    bool stream_started_ = false;    // the SSE response header is written
    std::string unsent_;             // SSE bytes produced and not yet handed to a write
    std::string in_flight_;          // the chunk being written
    bool writing_ = false;
    bool job_done_ = false;          // the producer finished; the last bytes may still be going out
    bool watching_peer_ = false;
    std::atomic<bool> pump_posted_{false};
};

}  // namespace tern::http
