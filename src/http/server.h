// An HTTP/1.1 server for OpenAI-style endpoints, with limits on headers, bodies, time and connections; what it serves
// is a Handler (tern serve's routes, tern route's gateway).
//
// Event-driven (Boost.Asio and Beast): a few I/O threads hold every connection, idle keep-alive ones included, so a
// connection costs a socket and a buffer, not a thread; admission limits, not a thread count, decide who waits.
// Answers at once (health, metrics) are given on the I/O threads; route() runs on a small worker pool (it may take
// CPU time: tokenizing, chat templates). A pending answer's output is pushed to the connection as it comes, and the
// socket is watched meanwhile, so that a client that leaves has its work cancelled at once. Measured for the choice:
// with a thread per connection, idle keep-alive clients used up the pool and /health queued behind them
// (docs/perf/reliability.md has the hostile-client figures of this layer).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "base/status.h"
#include "http/exchange.h"

namespace tern::http {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8000;                        // 0: any free port (see bound_port())
    size_t max_body_bytes = 8 << 20;
    size_t max_header_bytes = 64 << 10;     // request line and headers together (431 beyond)
    int read_timeout_s = 30;                // a request must arrive whole within this (slow senders are dropped)
    int write_timeout_s = 30;               // a client that reads nothing for this long is dropped
    int idle_timeout_s = 15;                // a keep-alive connection with no request for this long is closed
    int max_connections = 10000;            // open connections beyond this are closed at accept
    size_t max_unsent_bytes = 1 << 20;      // a stream whose client reads slower than this backlog is cancelled
    int io_threads = 2;
    int worker_threads = 2;                 // for Handler::route
};

class Server {
public:
    // `handler` must outlive the server.
    Server(ServerOptions options, const Handler& handler);
    ~Server();  // stop()s

    Status bind();          // binds and listens; bound_port() is then known
    int bound_port() const { return port_; }
    void serve();           // runs the I/O threads until stop(); returns at once when stop() came first
    // Any thread, before, during or after serve(): stops accepting, lets responses under way finish (up to the write
    // timeout), closes every connection and joins the I/O and worker threads.
    void stop();
    int num_connections() const;
    int64_t num_connections_closed() const;  // since the start, whoever closed them

    class Impl;

private:
    std::unique_ptr<Impl> impl_;
    int port_ = 0;
};

}  // namespace tern::http
