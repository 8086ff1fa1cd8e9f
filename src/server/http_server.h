// The HTTP face of the server: OpenAI endpoints, tokenize / detokenize, health, readiness and metrics, API keys, and
// limits on headers, bodies, time and connections. Handlers never throw out; every failure is an OpenAI error body.
//
// Event-driven (Boost.Asio and Beast): a few I/O threads hold every connection, idle keep-alive ones included, so a
// connection costs a socket and a buffer, not a thread; the admission limits (429 at submit), not a thread count,
// decide who waits. /health, /ready and /metrics are answered on the I/O threads at once. Work that takes CPU time
// (tokenizing, chat templates) runs on a small worker pool. Generation runs on the engine thread; its outputs are
// pushed to the connection as they come, and the socket is watched meanwhile, so that a client that leaves (streamed
// or not, queued or generating) has its request aborted and its KV freed within a step.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "server/auth.h"
#include "server/completion_handler.h"

namespace tern::server {

struct HttpOptions {
    std::string host = "127.0.0.1";
    int port = 8000;                        // 0: any free port (see bound_port())
    ApiKeys api_keys;
    size_t max_body_bytes = 8 << 20;
    size_t max_header_bytes = 64 << 10;     // request line and headers together (431 beyond)
    int read_timeout_s = 30;                // a request must arrive whole within this (slow senders are dropped)
    int write_timeout_s = 30;               // a client that reads nothing for this long is dropped
    int idle_timeout_s = 15;                // a keep-alive connection with no request for this long is closed
    int max_connections = 10000;            // open connections beyond this are closed at accept
    size_t max_unsent_bytes = 1 << 20;      // a stream whose client reads slower than this backlog is aborted
    int io_threads = 2;
    int worker_threads = 2;                 // tokenizing and chat templates
};

// Called after every generation request with its outcome (the per-request log line and request metrics).
using RequestObserver = std::function<void(const std::string& endpoint, const Outcome& outcome)>;

class HttpServer {
public:
    // The server answers /health at once; the other endpoints answer 503 until set_context() and set_ready().
    HttpServer(HttpOptions options, std::function<std::string()> render_metrics, RequestObserver on_request);
    ~HttpServer();  // stop()s

    Status bind();          // binds and listens; bound_port() is then known
    int bound_port() const { return port_; }
    void serve();           // runs the I/O threads until stop(); returns at once when stop() came first
    // Any thread, before, during or after serve(): stops accepting, lets responses under way finish (up to the write
    // timeout), closes every connection and joins the I/O and worker threads.
    void stop();
    void set_context(ServingContext* context) { context_.store(context); }  // must outlive the server
    void set_ready(bool ready) { ready_.store(ready); }

    int num_connections() const;

    class Impl;

private:
    std::atomic<ServingContext*> context_{nullptr};
    std::atomic<bool> ready_{false};
    int port_ = 0;
    std::unique_ptr<Impl> impl_;  // last: its routes read the two above
};

}  // namespace tern::server
