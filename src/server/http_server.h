// The HTTP face of the server (cpp-httplib): OpenAI endpoints, tokenize / detokenize, health, readiness and
// metrics, API keys, body and time limits. Handlers never throw out; every failure is an OpenAI error body.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "server/auth.h"
#include "server/completion_handler.h"

namespace httplib {
class Server;
class Request;
class Response;
}  // namespace httplib

namespace tern::server {

struct HttpOptions {
    std::string host = "127.0.0.1";
    int port = 8000;                        // 0: any free port (see bound_port())
    ApiKeys api_keys;
    size_t max_body_bytes = 8 << 20;
    int read_timeout_s = 30;                // a client that sends nothing for this long is dropped
    int write_timeout_s = 30;               // a client that reads nothing for this long is dropped
    int num_threads = 512;                  // connections served at once (a streaming request holds one)
};

// Called after every generation request with its outcome (the per-request log line and request metrics).
using RequestObserver = std::function<void(const std::string& endpoint, const Outcome& outcome)>;

class HttpServer {
public:
    // The server answers /health at once; the other endpoints answer 503 until set_context() and set_ready().
    HttpServer(HttpOptions options, std::function<std::string()> render_metrics, RequestObserver on_request);
    ~HttpServer();

    Status bind();          // binds the listening socket; bound_port() is then known
    int bound_port() const { return port_; }
    void serve();           // blocks until stop()
    void stop();            // stops accepting; in-flight handlers finish
    void set_context(ServingContext* context) { context_.store(context); }  // must outlive the server
    void set_ready(bool ready) { ready_.store(ready); }

private:
    void add_routes();
    // The serving context when the request may go on; otherwise the 401 or 503 is already sent.
    ServingContext* admit(const httplib::Request& request, httplib::Response& response) const;
    void handle_generation(ServingContext& context, const httplib::Request& request, httplib::Response& response,
                           api::Endpoint endpoint);
    void handle_tokenize(ServingContext& context, const httplib::Request& request, httplib::Response& response);
    void handle_detokenize(ServingContext& context, const httplib::Request& request, httplib::Response& response);
    void handle_models(ServingContext& context, httplib::Response& response);
    void handle_ready(httplib::Response& response);

    std::atomic<ServingContext*> context_{nullptr};
    HttpOptions options_;
    std::function<std::string()> render_metrics_;
    RequestObserver on_request_;
    std::unique_ptr<httplib::Server> http_;
    std::atomic<bool> ready_{false};
    int port_ = 0;
    int listen_socket_ = -1;
};

}  // namespace tern::server
