// tern serve: the OpenAI-compatible HTTP server. Listens at once (/health answers, /ready says 503), loads the model,
// warms the engine up, then turns ready; SIGTERM / SIGINT stop new requests, let in-flight ones finish within
// --drain-timeout, and exit 0.
#include <fmt/format.h>
#include <signal.h>

#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/commands.h"
#include "apps/engine_flags.h"
#include "base/log.h"
#include "server/chat_prompt.h"
#include "server/http_server.h"
#include "server/server_metrics.h"

namespace tern::apps {
namespace {

struct ServeOptions {
    std::string model_path;
    std::string served_model_name;
    std::string host = "127.0.0.1";
    int port = 8000;
    int num_threads = 2;
    std::vector<std::string> api_keys;
    std::string api_key_file;
    std::string chat_template;
    double drain_timeout_s = 30;
    int64_t max_body_bytes = 8 << 20;
    int timeout_s = 30;
    EngineFlags engine;
};

// One JSON line per request on stderr, as log collectors want it.
void log_request(const std::string& endpoint, const server::Outcome& outcome) {
    static std::mutex mutex;
    const nlohmann::json line = {{"event", "request"}, {"endpoint", endpoint}, {"status", outcome.status},
                                 {"prompt_tokens", outcome.prompt_tokens},
                                 {"completion_tokens", outcome.completion_tokens},
                                 {"ttft_ms", outcome.ttft_ms},
                                 {"tpot_ms", outcome.completion_tokens > 1 && outcome.ttft_ms >= 0
                                                 ? (outcome.total_ms - outcome.ttft_ms) / (outcome.completion_tokens - 1)
                                                 : 0.0},
                                 {"total_ms", outcome.total_ms}, {"finish_reason", outcome.finish_reason}};
    std::lock_guard lock(mutex);
    std::fprintf(stderr, "%s\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

// Runs a few tokens through the engine before serving, so the first user does not pay for first-touch allocations.
Status warm_up(engine::Engine& engine) {
    engine::EngineRequest request;
    request.id = -1;
    request.prompt = std::vector<int32_t>(8, 1);
    request.max_tokens = 4;
    request.sampling.temperature = 0.0f;
    TERN_RETURN_IF_ERROR(engine.add_request(request));
    while (engine.has_unfinished_requests()) TERN_RETURN_IF_ERROR(engine.step().status());
    engine.reset_prefix_cache();
    return Status::ok();
}

int wait_for_signal() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    int received = 0;
    sigwait(&signals, &received);
    return received;
}

int64_t weight_bytes(const Model& model) {
    int64_t total = 0;
    for (const GgufTensorInfo& info : model.file().tensors()) total += info.num_bytes;
    return total;
}

Status run_serve(const ServeOptions& options);

}  // namespace

void register_serve(CLI::App& app) {
    auto options = std::make_shared<ServeOptions>();
    CLI::App* command = app.add_subcommand("serve", "OpenAI-compatible HTTP server");
    command->add_option("-m,--model", options->model_path, "GGUF model file")->required();
    command->add_option("--served-model-name", options->served_model_name, "Model name in the API (default: file)");
    command->add_option("--host", options->host, "Address to listen on")->capture_default_str();
    command->add_option("--port", options->port, "Port (0 = any free port)")->capture_default_str();
    add_threads_option(command, &options->num_threads);
    command->add_option("--api-key", options->api_keys, "Accepted API key (repeatable)");
    command->add_option("--api-key-file", options->api_key_file, "File of accepted API keys, one a line");
    command->add_option("--chat-template", options->chat_template, "Jinja chat template file (default: the model's)");
    command->add_option("--drain-timeout", options->drain_timeout_s, "Seconds to finish requests on SIGTERM")
        ->capture_default_str();
    command->add_option("--max-body-bytes", options->max_body_bytes, "Largest request body")->capture_default_str();
    command->add_option("--timeout", options->timeout_s, "Seconds a client may stay silent (read) or unread (write)")
        ->capture_default_str();
    add_engine_flags(command, &options->engine);
    set_action(command, [options] { return run_serve(*options); });
}

namespace {

Status run_serve(const ServeOptions& options) {
    // Signals go to sigwait() only: block them before any thread starts, so every thread inherits the mask.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    TERN_ASSIGN_OR_RETURN(engine::EngineConfig config, engine_config_from_flags(options.engine));
    server::HttpOptions http_options;
    http_options.host = options.host;
    http_options.port = options.port;
    http_options.max_body_bytes = static_cast<size_t>(options.max_body_bytes);
    http_options.read_timeout_s = options.timeout_s;
    http_options.write_timeout_s = options.timeout_s;
    if (!options.api_key_file.empty()) {
        TERN_ASSIGN_OR_RETURN(http_options.api_keys, server::ApiKeys::from_file(options.api_key_file, options.api_keys));
    } else {
        http_options.api_keys = server::ApiKeys(options.api_keys);
    }
    std::unique_ptr<server::ServerMetrics> metrics;
    server::HttpServer http(http_options, [&metrics] { return metrics ? metrics->render() : std::string(); },
                            log_request);
    TERN_RETURN_IF_ERROR(http.bind());
    std::thread http_thread([&http] { http.serve(); });
    struct StopHttp {
        server::HttpServer& http;
        std::thread& thread;
        ~StopHttp() { http.stop(), thread.join(); }
    } stop_http{http, http_thread};
    log_info("listening on http://{}:{} (not ready until the model is loaded)", options.host, http.bound_port());

    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(options.model_path));
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::from_gguf(model->file()));
    TERN_ASSIGN_OR_RETURN(server::ChatPrompt chat, server::make_chat_prompt(model->file(), *tokenizer,
                                                                            options.chat_template));
    if (chat.source == "fallback") log_warn("the model has no chat template: chat requests use the plain format");
    ThreadPool pool(options.num_threads);
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> engine, engine::Engine::create(*model, pool, config));
    TERN_RETURN_IF_ERROR(warm_up(*engine));
    TERN_ASSIGN_OR_RETURN(metrics, server::ServerMetrics::create(weight_bytes(*model), engine->capacity().kv_bytes));
    const engine::EngineCapacity capacity = engine->capacity();
    serving::AsyncEngine async_engine(
        std::move(engine), [&metrics](const engine::RequestOutput& output) { metrics->on_finish(output); },
        [&metrics](const engine::EngineStats& stats) { metrics->on_step(stats); });
    metrics->attach(async_engine);
    const std::string model_name = options.served_model_name.empty() ? options.model_path : options.served_model_name;
    server::ServingContext context{async_engine, *tokenizer, model_name, capacity.max_model_len, chat.render};
    http.set_context(&context);
    log_info("serving '{}': {} threads, kernels {}, {} ({}), max batched tokens {}, max running {}, queue {} "
             "requests / {} tokens, prefix cache {}, chat template: {}, API keys: {}",
             model_name, options.num_threads, kernels::isa_name(model->kernel_table().isa), capacity.describe(),
             kv_type_name(config.kv_type), config.max_batched_tokens, config.max_running, config.max_queued_requests,
             config.max_queued_tokens, config.enable_prefix_caching ? "on" : "off", chat.source,
             http_options.api_keys.enabled() ? "required" : "none");
    http.set_ready(true);
    log_info("ready on http://{}:{}", options.host, http.bound_port());

    const int received = wait_for_signal();
    log_info("{}: draining (up to {} s)", received == SIGTERM ? "SIGTERM" : "SIGINT", options.drain_timeout_s);
    const bool drained = async_engine.drain(std::chrono::milliseconds(static_cast<int64_t>(options.drain_timeout_s * 1000)));
    log_info("{}", drained ? "all requests finished; exiting" : "drain timeout: remaining requests aborted; exiting");
    http.set_context(nullptr);
    return Status::ok();
}

}  // namespace
}  // namespace tern::apps
