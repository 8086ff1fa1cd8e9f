// tern route: the gateway in front of replicas (docs/route.md). Reads route.toml, listens, relays. SIGHUP reloads the
// configuration without dropping a connection (a bad file keeps the old one and says why); SIGTERM / SIGINT stop
// accepting, let the answers under way finish (up to the timeout) and exit 0.
#include <signal.h>

#include <cstdio>
#include <mutex>
#include <thread>

#include "apps/commands.h"
#include "base/log.h"
#include "http/server.h"
#include "route/config.h"
#include "route/gateway.h"

namespace tern::apps {
namespace {

struct RouteOptions {
    std::string config_path;
    std::string host;  // overrides [listen] host
    int port = -1;     // overrides [listen] port
};

void write_access_log(const std::string& line) {
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    std::fprintf(stderr, "%s\n", line.c_str());
}

http::ServerOptions server_options(const route::ListenConfig& listen) {
    http::ServerOptions options;
    options.host = listen.host;
    options.port = listen.port;
    options.max_body_bytes = listen.max_body_bytes;
    options.read_timeout_s = listen.timeout_s;
    options.write_timeout_s = listen.timeout_s;
    options.max_connections = listen.max_connections;
    return options;
}

// Waits for the signals the main thread keeps for itself; SIGHUP reloads, the others return.
int wait_for_stop(const sigset_t& signals, const std::string& config_path, route::Gateway& gateway) {
    while (true) {
        int signal = 0;
        if (sigwait(&signals, &signal) != 0) continue;
        if (signal != SIGHUP) return signal;
        Result<route::RouteConfig> config = route::load_route_config(config_path);
        if (!config.is_ok()) {
            log_error("SIGHUP: the configuration was not reloaded, the running one stays: {}", config.status().message());
            continue;
        }
        gateway.reload(std::move(config.value()));
        log_info("SIGHUP: reloaded {}", config_path);
    }
}

Status run_route(const RouteOptions& options) {
    sigset_t signals;
    sigemptyset(&signals);
    for (int signal : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, signal);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts: they all inherit the mask

    TERN_ASSIGN_OR_RETURN(route::RouteConfig config, route::load_route_config(options.config_path));
    if (!options.host.empty()) config.listen.host = options.host;
    if (options.port >= 0) config.listen.port = options.port;
    const http::ServerOptions listen = server_options(config.listen);
    route::Gateway gateway(std::move(config), write_access_log);
    http::Server server(listen, gateway);
    TERN_RETURN_IF_ERROR(server.bind());
    std::thread serving([&server] { server.serve(); });
    log_info("tern route: listening on http://{}:{} ({})", listen.host, server.bound_port(), options.config_path);
    const int signal = wait_for_stop(signals, options.config_path, gateway);
    log_info("{}: stopping", signal == SIGTERM ? "SIGTERM" : "SIGINT");
    server.stop();
    serving.join();
    return Status::ok();
}

}  // namespace

void register_route(CLI::App& app) {
    auto options = std::make_shared<RouteOptions>();
    CLI::App* command = app.add_subcommand("route", "Gateway in front of OpenAI-compatible replicas (route.toml)");
    command->add_option("-c,--config", options->config_path, "The route configuration (TOML)")->required();
    command->add_option("--host", options->host, "Address to listen on (overrides [listen] host)");
    command->add_option("--port", options->port, "Port (overrides [listen] port; 0 = any free port)")
        ->check(CLI::Range(0, 65535));
    set_action(command, [options] { return run_route(*options); });
}

}  // namespace tern::apps
