// tern serve's HTTP face: the OpenAI endpoints, tokenize / detokenize, health, readiness and metrics, and API keys
// (http_routes.h), served by the event-driven HTTP layer of http/server.h with its limits on headers, bodies, time
// and connections.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "http/server.h"
#include "server/auth.h"
#include "server/http_routes.h"

namespace tern::server {

struct HttpOptions {
    http::ServerOptions server;
    ApiKeys api_keys;
    ApiKeys admin_keys;  // open /debug/trace
};

class HttpServer {
public:
    // The server answers /health at once; the other endpoints answer 503 until set_context() and set_ready().
    HttpServer(HttpOptions options, std::function<std::string()> render_metrics, RequestObserver on_request);
    ~HttpServer();  // stop()s

    Status bind() { return server_.bind(); }  // binds and listens; bound_port() is then known
    int bound_port() const { return server_.bound_port(); }
    void serve() { server_.serve(); }          // runs the I/O threads until stop()
    void stop() { server_.stop(); }            // see http::Server::stop
    void set_context(ServingContext* context) { context_.store(context); }  // must outlive the server
    void set_ready(bool ready) { ready_.store(ready); }
    int num_connections() const { return server_.num_connections(); }

private:
    std::atomic<ServingContext*> context_{nullptr};
    std::atomic<bool> ready_{false};
    Routes routes_;          // reads the two above
    http::Server server_;    // last: serves routes_
};

}  // namespace tern::server
