// tern serve: the OpenAI-compatible HTTP server. Listens at once (/health answers, /ready says 503), loads the model,
// warms the engine up, then turns ready; SIGTERM / SIGINT stop new requests, let in-flight ones finish within
// --drain-timeout, and exit 0 (during loading they end the process at once). A model that fails to load is one error
// line and exit 1; so is an engine thread that dies while serving (its requests get 500), for a supervisor to restart.
#include <fmt/format.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/commands.h"
#include "apps/engine_flags.h"
#include "apps/serve_events.h"
#include "base/log.h"
#include "grammar/tokenizer_vocabulary.h"
#include "server/chat_prompt.h"
#include "server/http_server.h"
#include "server/request_record.h"
#include "trace/trace.h"
#include "server/server_metrics.h"

namespace tern::apps {
namespace {

struct ServeOptions {
    std::string model_path;      // the file loaded
    std::string model_argument;  // -m as given (a path, or a store name): the default served name
    std::string served_model_name;
    std::string host = "127.0.0.1";
    int port = 8000;
    int num_threads = 2;
    std::vector<std::string> api_keys;
    std::string api_key_file;
    std::vector<std::string> admin_keys;
    std::string trace_path;
    std::string chat_template;
    std::string reasoning_parser = "auto";
    double drain_timeout_s = 30;
    int64_t max_body_bytes = 8 << 20;
    int timeout_s = 30;
    int keep_alive_timeout_s = 15;
    int max_connections = 10000;
    int64_t max_header_bytes = 64 << 10;
    int64_t max_unsent_bytes = 1 << 20;
    std::string pooling = "mean";
    EngineFlags engine;
};

// One JSON line per request on stderr, as log collectors want it.
void log_request(const std::string& endpoint, const server::Outcome& outcome) {
    static std::mutex mutex;
    const nlohmann::json line = server::request_record(endpoint, outcome);
    std::lock_guard lock(mutex);
    std::fprintf(stderr, "%s\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

// Runs a few tokens through the engine before serving, so the first user does not pay for first-touch allocations:
// a prefill and one decode step (each decode step of an 8B model is a quarter second of start-up on two cores).
Status warm_up(engine::Engine& engine) {
    engine::EngineRequest request;
    request.id = -1;
    request.prompt = std::vector<int32_t>(8, 1);
    request.max_tokens = 2;
    request.sampling.temperature = 0.0f;
    TERN_RETURN_IF_ERROR(engine.add_request(request));
    while (engine.has_unfinished_requests()) TERN_RETURN_IF_ERROR(engine.step().status());
    engine.reset_prefix_cache();
    return Status::ok();
}

Status run_serve(const ServeOptions& options);

}  // namespace

void register_serve(CLI::App& app) {
    auto options = std::make_shared<ServeOptions>();
    CLI::App* command = app.add_subcommand("serve", "OpenAI-compatible HTTP server");
    add_model_option(command, &options->model_path, "GGUF model file", &options->model_argument)->required();
    command->add_option("--served-model-name", options->served_model_name, "Model name in the API (default: -m as given)");
    command->add_option("--host", options->host, "Address to listen on")->capture_default_str();
    command->add_option("--port", options->port, "Port (0 = any free port)")->capture_default_str();
    add_threads_option(command, &options->num_threads);
    command->add_option("--api-key", options->api_keys, "Accepted API key (repeatable)");
    command->add_option("--api-key-file", options->api_key_file, "File of accepted API keys, one a line");
    command->add_option("--admin-key", options->admin_keys,
                        "Key that opens GET /debug/trace?seconds=N (repeatable; without one that endpoint is off)");
    command->add_option("--trace", options->trace_path,
                        "Record a Chrome trace (JSON, for Perfetto) of everything served, written to FILE on exit");
    command->add_option("--chat-template", options->chat_template, "Jinja chat template file (default: the model's)");
    command->add_option("--reasoning-parser", options->reasoning_parser,
                        "Thinking markers to split from the answer: auto (<think>...</think> when the chat template "
                        "handles them), none, or deepseek_r1 / qwen3 (<think>...</think> whatever the template)")
        ->check(CLI::IsMember({"auto", "none", "deepseek_r1", "qwen3"}))
        ->capture_default_str();
    command->add_option("--drain-timeout", options->drain_timeout_s, "Seconds to finish requests on SIGTERM")
        ->capture_default_str();
    command->add_option("--max-body-bytes", options->max_body_bytes, "Largest request body")->capture_default_str();
    command->add_option("--timeout", options->timeout_s,
                        "Seconds a client has to send a whole request, and may leave a response unread")
        ->capture_default_str();
    command->add_option("--keep-alive-timeout", options->keep_alive_timeout_s,
                        "Seconds an idle keep-alive connection is kept open")
        ->capture_default_str()->check(CLI::Range(1, 3600));
    command->add_option("--max-connections", options->max_connections, "Open connections beyond which new ones close")
        ->capture_default_str()->check(CLI::Range(1, 1000000));
    command->add_option("--max-header-bytes", options->max_header_bytes, "Largest request line and headers (431)")
        ->capture_default_str()->check(CLI::Range(int64_t{1024}, int64_t{16} << 20));
    command->add_option("--max-unsent-bytes", options->max_unsent_bytes,
                        "Bytes of a streamed answer held for a client that does not read them; beyond, the request "
                        "is aborted and its KV freed")
        ->capture_default_str()->check(CLI::Range(int64_t{4096}, int64_t{1} << 30));
    command->add_option("--pooling", options->pooling, "How /v1/embeddings pools a text's hidden states")
        ->capture_default_str()->check(CLI::IsMember({"mean", "last"}));
    add_engine_flags(command, &options->engine);
    set_action(command, [options] { return run_serve(*options); });
}

namespace {

// Everything the HTTP handlers and the engine thread reach. Members are destroyed in reverse order: the context, then
// the engine (joining its thread, whose observers use the metrics), then the metrics, the pool and the model.
struct ServingState {
    std::unique_ptr<Model> model;
    std::unique_ptr<Model> draft_model;  // --draft-model
    std::unique_ptr<Tokenizer> tokenizer;
    server::ChatPrompt chat;
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<server::ServerMetrics> metrics;
    std::atomic<server::ServerMetrics*> published_metrics{nullptr};  // what /metrics renders, once complete
    std::unique_ptr<serving::AsyncEngine> engine;
    std::unique_ptr<grammar::GrammarCache> grammars;  // structured output, for the model's vocabulary
    std::unique_ptr<server::ServingContext> context;
};

// The HTTP server's thread; stops it and waits for every handler before the serving state it uses is destroyed.
class HttpThread {
public:
    explicit HttpThread(server::HttpServer& http) : http_(http), thread_([&http] { http.serve(); }) {}
    ~HttpThread() {
        http_.stop();
        thread_.join();
    }

private:
    server::HttpServer& http_;
    std::thread thread_;
};

Result<server::HttpOptions> http_options_from(const ServeOptions& options) {
    server::HttpOptions http_options;
    http_options.server.host = options.host;
    http_options.server.port = options.port;
    http_options.server.max_body_bytes = static_cast<size_t>(options.max_body_bytes);
    http_options.server.read_timeout_s = options.timeout_s;
    http_options.server.write_timeout_s = options.timeout_s;
    http_options.server.idle_timeout_s = options.keep_alive_timeout_s;
    http_options.server.max_connections = options.max_connections;
    http_options.server.max_header_bytes = static_cast<size_t>(options.max_header_bytes);
    http_options.server.max_unsent_bytes = static_cast<size_t>(options.max_unsent_bytes);
    if (!options.api_key_file.empty()) {
        TERN_ASSIGN_OR_RETURN(http_options.api_keys, server::ApiKeys::from_file(options.api_key_file, options.api_keys));
    } else {
        http_options.api_keys = server::ApiKeys(options.api_keys);
    }
    http_options.admin_keys = server::ApiKeys(options.admin_keys);
    return http_options;
}

// Loads the model, warms the engine up and starts the engine thread; `on_failure` hears if that thread dies.
Status load_serving_state(const ServeOptions& options, const engine::EngineConfig& config, ServingState& state,
                          serving::AsyncEngine::FailureObserver on_failure) {
    TERN_ASSIGN_OR_RETURN(state.model, Model::load(options.model_path, {.context_length = config.max_model_len}));
    TERN_ASSIGN_OR_RETURN(state.tokenizer, Tokenizer::from_gguf(state.model->file()));
    TERN_ASSIGN_OR_RETURN(state.chat, server::make_chat_prompt(state.model->file(), *state.tokenizer,
                                                               options.chat_template));
    if (state.chat.source == "fallback") log_warn("the model has no chat template: chat requests use the plain format");
    state.pool = std::make_unique<ThreadPool>(options.num_threads);
    TERN_ASSIGN_OR_RETURN(state.draft_model, load_draft_model(options.engine, config));
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> engine,
                          engine::Engine::create(*state.model, *state.pool, config, state.draft_model.get()));
    TERN_ASSIGN_OR_RETURN(const bool probed, apply_step_budget(options.engine, *engine));
    if (!probed) TERN_RETURN_IF_ERROR(warm_up(*engine));  // the step-budget probes warm it up otherwise
    TERN_ASSIGN_OR_RETURN(state.metrics,
                          server::ServerMetrics::create(state.model->stored_weight_bytes(), engine->capacity().kv_bytes));
    server::ServerMetrics* metrics = state.metrics.get();
    state.engine = std::make_unique<serving::AsyncEngine>(
        std::move(engine), [metrics](const engine::RequestOutput& output) { metrics->on_finish(output); },
        [metrics](const engine::EngineStats& stats) { metrics->on_step(stats); }, std::move(on_failure));
    metrics->attach(*state.engine);
    state.published_metrics.store(metrics);
    const std::string model_name = options.served_model_name.empty() ? options.model_argument : options.served_model_name;
    state.context = std::make_unique<server::ServingContext>(server::ServingContext{
        *state.engine, *state.tokenizer, model_name, state.engine->capacity().max_model_len, state.chat.render,
        options.pooling == "last" ? engine::Pooling::kLast : engine::Pooling::kMean,
        state.model->hparams().embedding_dim});
    state.grammars = std::make_unique<grammar::GrammarCache>(
        grammar::vocabulary_of(*state.tokenizer, state.model->hparams().vocab_size));
    state.context->grammars = state.grammars.get();
    state.context->tool_format = state.chat.tool_format.value_or(tools::ToolFormat::kHermes);
    if (options.reasoning_parser == "auto") state.context->reasoning = state.chat.reasoning;
    if (options.reasoning_parser == "deepseek_r1" || options.reasoning_parser == "qwen3") {
        state.context->reasoning = tools::ReasoningFormat{};
    }
    return Status::ok();
}

std::string describe_speculation(const EngineFlags& flags, const engine::EngineConfig& config) {
    const int num_tokens = config.speculative.num_speculative_tokens;
    if (num_tokens == 0) return "off";
    const std::string method = config.speculative.method == engine::DraftMethod::kNgram
                                   ? "prompt lookup"
                                   : "draft model " + flags.draft_model;
    return fmt::format("{}, {} tokens, none above {} running", method, num_tokens,
                       config.speculative.disable_by_batch_size);
}

void log_serving(const ServeOptions& options, const engine::EngineConfig& config, const ServingState& state,
                 const server::HttpOptions& http_options) {
    log_info("serving '{}' from {}: {} threads, kernels {}, {} ({}), max batched tokens {}, max running {}, queue {} "
             "requests / {} tokens, prefix cache {}, speculative decoding: {}, chat template: {}, tool calls: {}{}, "
             "reasoning: {}, API keys: {}",
             state.context->model_name, options.model_path, options.num_threads, kernels::isa_name(state.model->kernel_table().isa),
             state.engine->capacity().describe(), kv_type_name(config.kv_type),
             state.engine->config().max_batched_tokens, state.engine->config().max_running,
             config.max_queued_requests, config.max_queued_tokens,
             config.enable_prefix_caching ? "on" : "off", describe_speculation(options.engine, config), state.chat.source,
             tools::format_name(state.context->tool_format), state.chat.tool_format ? "" : " (none in the template)",
             state.context->reasoning ? state.context->reasoning->start + "..." + state.context->reasoning->end
                                      : "none",
             http_options.api_keys.enabled() ? "required" : "none");
}

// Serves until a signal (drain, then exit 0) or an engine failure (exit 1 with the reason).
Status serve_until_stopped(const ServeOptions& options, ServeEvents& events, server::HttpServer& http,
                           ServingState& state) {
    events.begin_serving();
    http.set_ready(true);
    log_info("ready on http://{}:{}", options.host, http.bound_port());
    const ServeEvents::Event event = events.wait();
    http.set_ready(false);
    if (event.kind == ServeEvents::Kind::kEngineFailure) {
        return internal_error(event.reason + "; exiting so that a supervisor can restart the server");
    }
    log_info("{}: draining (up to {} s)", event.signal == SIGTERM ? "SIGTERM" : "SIGINT", options.drain_timeout_s);
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(options.drain_timeout_s * 1000));
    const bool drained = state.engine->drain(timeout);
    log_info("{}", drained ? "all requests finished; exiting" : "drain timeout: remaining requests failed; exiting");
    return Status::ok();
}

Status run_serve(const ServeOptions& options) {
    ServeEvents events;  // first: the signal mask must be in place before any other thread starts
    TERN_ASSIGN_OR_RETURN(engine::EngineConfig config, engine_config_from_flags(options.engine));
    TERN_ASSIGN_OR_RETURN(server::HttpOptions http_options, http_options_from(options));
    trace::FileTrace trace(options.trace_path);  // before the state: recording may go on until the engine stops
    ServingState state;  // declared before the HTTP server: it outlives every handler
    server::HttpServer http(
        http_options,
        [&state] {
            server::ServerMetrics* metrics = state.published_metrics.load();
            return metrics != nullptr ? metrics->render() : std::string();
        },
        [&state](const std::string& endpoint, const server::Outcome& outcome) {
            log_request(endpoint, outcome);
            server::ServerMetrics* metrics = state.published_metrics.load();
            if (metrics != nullptr) metrics->on_response(endpoint, outcome.status);
        });
    TERN_RETURN_IF_ERROR(http.bind());
    HttpThread http_thread(http);
    log_info("listening on http://{}:{} (not ready until the model is loaded)", options.host, http.bound_port());
    TERN_RETURN_IF_ERROR(load_serving_state(options, config, state,
                                            [&events](const std::string& reason) { events.engine_failed(reason); }));
    http.set_context(state.context.get());
    log_serving(options, config, state, http_options);
    TERN_RETURN_IF_ERROR(trace.start());
    const Status served = serve_until_stopped(options, events, http, state);
    const Status traced = trace.finish();
    return served.is_ok() ? traced : served;
}

}  // namespace
}  // namespace tern::apps
