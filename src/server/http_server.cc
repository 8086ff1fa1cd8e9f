#include "server/http_server.h"

namespace tern::server {

HttpServer::HttpServer(HttpOptions options, std::function<std::string()> render_metrics, RequestObserver on_request)
    : routes_(std::move(options.api_keys), std::move(options.admin_keys), std::move(render_metrics), std::move(on_request), context_, ready_),
      server_(std::move(options.server), routes_) {}

HttpServer::~HttpServer() { server_.stop(); }

}  // namespace tern::server
