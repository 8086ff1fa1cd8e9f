#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>


namespace tern::server {
namespace {

using nlohmann::json;

constexpr int kListenBacklog = 4096;  // connections waiting for accept(); the kernel caps it at net.core.somaxconn

void send_json(httplib::Response& response, int status, const json& body) {
    response.status = status;
    response.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

}  // namespace

HttpServer::HttpServer(HttpOptions options, std::function<std::string()> render_metrics, RequestObserver on_request)
    : options_(std::move(options)),
      render_metrics_(std::move(render_metrics)),
      on_request_(std::move(on_request)),
      http_(std::make_unique<httplib::Server>()) {
    const int num_threads = options_.num_threads;
    http_->new_task_queue = [num_threads] { return new httplib::ThreadPool(static_cast<size_t>(num_threads)); };
    // cpp-httplib listens with a backlog of 5: a burst of clients overflows it and the kernel drops their
    // connections. Keep the listening socket so that bind() can listen again with a deeper queue (Linux resizes it).
    http_->set_socket_options([this](socket_t sock) {
        httplib::default_socket_options(sock);
        listen_socket_ = sock;
    });
    http_->set_payload_max_length(options_.max_body_bytes);
    http_->set_read_timeout(options_.read_timeout_s, 0);
    http_->set_write_timeout(options_.write_timeout_s, 0);
    http_->set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
        send_json(response, 500, error_body(500, "internal error while handling the request"));
    });
    add_routes();
}

HttpServer::~HttpServer() = default;

Status HttpServer::bind() {
    port_ = options_.port == 0 ? http_->bind_to_any_port(options_.host)
                               : (http_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
    if (port_ < 0) {
        return Status(StatusCode::kUnavailable,
                      fmt::format("cannot listen on {}:{} (in use? choose another --port)", options_.host, options_.port));
    }
    if (listen_socket_ >= 0) ::listen(listen_socket_, kListenBacklog);
    return Status::ok();
}

void HttpServer::serve() { http_->listen_after_bind(); }

void HttpServer::stop() { http_->stop(); }

ServingContext* HttpServer::admit(const httplib::Request& request, httplib::Response& response) const {
    if (!options_.api_keys.allows(request.get_header_value("Authorization"))) {
        response.set_header("WWW-Authenticate", "Bearer");
        send_json(response, 401, error_body(401, "a valid API key is required: send 'Authorization: Bearer KEY'"));
        return nullptr;
    }
    ServingContext* context = context_.load();
    if (context == nullptr || !ready_.load()) {
        response.set_header("Retry-After", "1");
        send_json(response, 503, error_body(503, "the model is still loading; retry shortly"));
        return nullptr;
    }
    return context;
}

void HttpServer::add_routes() {
    http_->Get("/health", [](const httplib::Request&, httplib::Response& response) {
        send_json(response, 200, {{"status", "ok"}});
    });
    http_->Get("/ready", [this](const httplib::Request&, httplib::Response& response) { handle_ready(response); });
    http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
        response.set_content(render_metrics_ ? render_metrics_() : std::string(), "text/plain; version=0.0.4");
    });
    http_->Get("/v1/models", [this](const httplib::Request& request, httplib::Response& response) {
        if (ServingContext* context = admit(request, response)) handle_models(*context, response);
    });
    http_->Post("/v1/completions", [this](const httplib::Request& request, httplib::Response& response) {
        if (ServingContext* context = admit(request, response)) {
            handle_generation(*context, request, response, api::Endpoint::kCompletions);
        }
    });
    http_->Post("/v1/chat/completions", [this](const httplib::Request& request, httplib::Response& response) {
        if (ServingContext* context = admit(request, response)) {
            handle_generation(*context, request, response, api::Endpoint::kChatCompletions);
        }
    });
    http_->Post("/tokenize", [this](const httplib::Request& request, httplib::Response& response) {
        if (ServingContext* context = admit(request, response)) handle_tokenize(*context, request, response);
    });
    http_->Post("/detokenize", [this](const httplib::Request& request, httplib::Response& response) {
        if (ServingContext* context = admit(request, response)) handle_detokenize(*context, request, response);
    });
    http_->set_error_handler([](const httplib::Request& request, httplib::Response& response) {
        if (!response.body.empty()) return;
        const std::string message = response.status == 404   ? "no such endpoint: " + request.path
                                    : response.status == 413 ? "the request body is too large"
                                                             : "the request failed";
        send_json(response, response.status, error_body(response.status, message));
    });
}

void HttpServer::handle_ready(httplib::Response& response) {
    ServingContext* context = context_.load();
    if (context == nullptr || !ready_.load()) return send_json(response, 503, {{"status", "loading"}});
    if (!context->engine.accepting()) return send_json(response, 503, {{"status", "draining"}});
    if (context->engine.queue_full()) return send_json(response, 503, {{"status", "queue full"}});
    send_json(response, 200, {{"status", "ready"}});
}

void HttpServer::handle_models(ServingContext& context, httplib::Response& response) {
    const json model = {{"id", context.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "tern"},
                        {"max_model_len", context.max_model_len}};
    send_json(response, 200, {{"object", "list"}, {"data", json::array({model})}});
}

}  // namespace tern::server
