#include "server/http_routes.h"

#include "server/embeddings.h"
#include "server/trace_capture.h"

#include "dashboard/page.h"

#include <nlohmann/json.hpp>

namespace tern::server {
namespace {

using nlohmann::json;

std::string dump(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

std::optional<json> parse_body(const http::Request& request) {
    json body = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object()) return std::nullopt;
    return body;
}

constexpr const char* kBadBody = "the request body must be a JSON object (valid JSON, valid UTF-8)";

http::Answer bad_body() { return http::error_answer(400, kBadBody); }
Outcome bad_body_outcome() { return error_outcome(400, kBadBody); }

// A 401 that names the scheme, as RFC 9110 asks.
http::Answer unauthorized(const std::string& message) {
    http::Answer answer = http::error_answer(401, message);
    answer.headers.emplace_back("WWW-Authenticate", "Bearer");
    return answer;
}

bool is_generation_path(const std::string& path) {
    return path == "/v1/completions" || path == "/v1/chat/completions";
}

}  // namespace

Routes::Routes(ApiKeys api_keys, ApiKeys admin_keys, std::function<std::string()> render_metrics,
               RequestObserver on_request, const std::atomic<ServingContext*>& context, const std::atomic<bool>& ready)
    : api_keys_(std::move(api_keys)),
      admin_keys_(std::move(admin_keys)),
      render_metrics_(std::move(render_metrics)),
      on_request_([recent = recent_.get(), on_request = std::move(on_request)](const std::string& endpoint,
                                                                               const Outcome& outcome) {
          recent->add(request_record(endpoint, outcome));
          if (on_request) on_request(endpoint, outcome);
      }),
      context_(context),
      ready_(ready) {}

http::Answer outcome_answer(const Outcome& outcome) {
    http::Answer answer = http::json_answer(outcome.status, dump(outcome.body));
    http::add_retry_after_if_refused(answer);
    return answer;
}

http::Answer EngineJob::whole_answer() const { return outcome_answer(outcome()); }

// A generation or embedding request refused before it ran (bad body or fields, a full queue, draining) is logged and
// counted as one that ran: an overload shows in the request log and in tern:http_responses_total.
http::Answer Routes::refused(const std::string& path, const Outcome& outcome) const {
    if (on_request_) on_request_(path, outcome);
    return outcome_answer(outcome);
}

void EngineJob::delivered() {
    if (observer_) observer_(path_, outcome());
}

std::optional<http::Answer> Routes::answer_at_once(const http::Request& request) const {
    ServingContext* context = context_.load();
    const bool get = request.method == "GET";
    if (get && request.path == "/health") {
        // Liveness: a process whose engine thread died is not alive for a supervisor (it exits soon anyway).
        if (context != nullptr && context->engine.failed()) return http::json_answer(503, R"({"status":"failed"})");
        return http::json_answer(200, R"({"status":"ok"})");
    }
    if (get && request.path == "/ready") return ready_answer();
    if (get && request.path == "/metrics") {
        return http::Answer{200, "text/plain; version=0.0.4", render_metrics_ ? render_metrics_() : std::string(), {}};
    }
    // Like /metrics, without a key: figures only, no prompts or outputs (the playground sends the key it is given).
    if (get && request.path == "/dashboard") {
        return http::Answer{200, "text/html; charset=utf-8", std::string(dashboard::page_html()), {}};
    }
    if (get && request.path == "/dashboard/requests") return http::json_answer(200, recent_->render());
    if (get && request.path == "/debug/trace") return trace_refusal(request);
    const bool known = (get && request.path == "/v1/models") ||
                       (request.method == "POST" && (is_generation_path(request.path) || request.path == "/tokenize" ||
                                                     request.path == "/detokenize" || request.path == "/v1/embeddings"));
    if (!known) return http::error_answer(404, "no such endpoint: " + request.method + " " + request.path);
    if (auto refused = refusal(request)) return refused;
    if (request.path == "/v1/models") return models_answer(*context);
    return std::nullopt;
}

// /debug/trace exists only with an admin key configured, and answers only to it (then on a worker: it waits).
std::optional<http::Answer> Routes::trace_refusal(const http::Request& request) const {
    if (!admin_keys_.enabled()) {
        return http::error_answer(404, "no such endpoint: GET /debug/trace (start tern serve with --admin-key to "
                                       "enable it)");
    }
    if (!admin_keys_.allows(request.header("authorization"))) {
        return unauthorized("/debug/trace needs the admin key: 'Authorization: Bearer KEY'");
    }
    return std::nullopt;
}

// 401 without a valid key; 503 until the model is loaded.
std::optional<http::Answer> Routes::refusal(const http::Request& request) const {
    if (!api_keys_.allows(request.header("authorization"))) {
        return unauthorized("a valid API key is required: send 'Authorization: Bearer KEY'");
    }
    if (context_.load() == nullptr || !ready_.load()) {
        return http::error_answer(503, "the model is still loading; retry shortly");
    }
    return std::nullopt;
}

http::Answer Routes::ready_answer() const {
    ServingContext* context = context_.load();
    if (context != nullptr && context->engine.failed()) return http::json_answer(503, R"({"status":"failed"})");
    if (context == nullptr || !ready_.load()) return http::json_answer(503, R"({"status":"loading"})");
    if (!context->engine.accepting()) return http::json_answer(503, R"({"status":"draining"})");
    if (context->engine.queue_full()) return http::json_answer(503, R"({"status":"queue full"})");
    return http::json_answer(200, R"({"status":"ready"})");
}

http::Answer Routes::models_answer(const ServingContext& context) const {
    const json model = {{"id", context.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "tern"},
                        {"max_model_len", context.max_model_len}};
    return http::json_answer(200, dump({{"object", "list"}, {"data", json::array({model})}}));
}

http::RouteResult Routes::route(const http::Request& request) const {
    if (request.path == "/debug/trace") {
        auto capture = TraceCapture::start(request);
        if (auto* answer = std::get_if<http::Answer>(&capture)) return std::move(*answer);
        return std::unique_ptr<http::PendingAnswer>(std::move(std::get<std::unique_ptr<TraceCapture>>(capture)));
    }
    ServingContext* context = context_.load();
    if (auto refused = refusal(request)) return std::move(*refused);  // the readiness may have changed meanwhile
    if (request.path == "/v1/completions") return generation(*context, request, api::Endpoint::kCompletions);
    if (request.path == "/v1/chat/completions") return generation(*context, request, api::Endpoint::kChatCompletions);
    if (request.path == "/v1/embeddings") return embeddings(*context, request);
    if (request.path == "/tokenize") return tokenize(*context, request);
    if (request.path == "/detokenize") return detokenize(*context, request);
    return http::error_answer(404, "no such endpoint: " + request.path);
}

GenerationJob::GenerationJob(std::string path, const RequestObserver& observer, ServingContext& context,
                             PreparedRequest prepared)
    : EngineJob(std::move(path), observer), prepared_(std::move(prepared)), runner_(context, prepared_) {}

std::optional<Outcome> GenerationJob::submit(std::chrono::steady_clock::time_point start) {
    if (auto failed = runner_.submit(start)) return failed;
    producer_ = std::make_unique<ResponseProducer>(runner_, prepared_, start);
    return std::nullopt;
}

bool GenerationJob::poll(std::vector<std::string>& events) {
    return producer_->poll(std::chrono::milliseconds(0), events);
}

// Parses, tokenizes and submits; the answer when any of it fails (400, 404, 429, 503), else the job under way.
http::RouteResult Routes::generation(ServingContext& context, const http::Request& request, api::Endpoint endpoint) const {
    const auto start = std::chrono::steady_clock::now();
    std::optional<json> body = parse_body(request);
    if (!body) return refused(request.path, bad_body_outcome());
    auto parsed = parse_completion_request(endpoint, *body);
    if (auto* error = std::get_if<RequestError>(&parsed)) {
        return refused(request.path, error_outcome(400, error->message, error->param));
    }
    CompletionRequest& completion = std::get<CompletionRequest>(parsed);
    if (completion.constraint || completion.tools) {
        // nlohmann::json sorts keys; schemas and tools must keep the client's order: the body is read once more.
        const nlohmann::ordered_json ordered_body = nlohmann::ordered_json::parse(request.body, nullptr, false);
        if (completion.constraint) api::keep_schema_order(ordered_body, *completion.constraint);
        if (completion.tools) api::keep_tool_order(ordered_body, *completion.tools);
    }
    auto prepared = prepare_request(context, std::move(completion));
    if (auto* outcome = std::get_if<Outcome>(&prepared)) return refused(request.path, *outcome);
    auto job = std::make_unique<GenerationJob>(request.path, on_request_, context,
                                               std::move(std::get<PreparedRequest>(prepared)));
    if (auto failed = job->submit(start)) return refused(request.path, *failed);  // 429 at once when the queue is full
    return job;
}

http::RouteResult Routes::embeddings(ServingContext& context, const http::Request& request) const {
    const auto start = std::chrono::steady_clock::now();
    std::optional<json> body = parse_body(request);
    if (!body) return refused(request.path, bad_body_outcome());
    auto parsed = parse_embedding_request(*body, context.embedding_dim);
    if (auto* error = std::get_if<RequestError>(&parsed)) {
        return refused(request.path, error_outcome(400, error->message, error->param));
    }
    auto job = std::make_unique<EmbeddingJob>(request.path, on_request_, context,
                                              std::move(std::get<EmbeddingRequest>(parsed)));
    if (auto failed = job->submit(start)) return refused(request.path, *failed);
    return job;
}

http::Answer Routes::tokenize(const ServingContext& context, const http::Request& request) const {
    std::optional<json> body = parse_body(request);
    if (!body) return bad_body();
    const auto prompt = body->find("prompt");
    if (prompt == body->end() || !prompt->is_string()) {
        return http::error_answer(400, "'prompt' must be a string", "prompt");
    }
    const auto add_special = body->find("add_special_tokens");
    const bool with_special = add_special == body->end() || !add_special->is_boolean() || add_special->get<bool>();
    const std::vector<int32_t> ids = context.tokenizer.encode(prompt->get<std::string>(), with_special, false);
    return http::json_answer(200, dump({{"tokens", ids}, {"count", ids.size()}, {"max_model_len", context.max_model_len}}));
}

http::Answer Routes::detokenize(const ServingContext& context, const http::Request& request) const {
    std::optional<json> body = parse_body(request);
    if (!body) return bad_body();
    const auto tokens = body->find("tokens");
    std::vector<int32_t> ids;
    bool valid = tokens != body->end() && tokens->is_array();
    for (size_t idx = 0; valid && idx < tokens->size(); ++idx) {
        const json& item = (*tokens)[idx];
        valid = item.is_number_integer() && item.get<int64_t>() >= 0 &&
                item.get<int64_t>() < context.tokenizer.vocab_size();
        if (valid) ids.push_back(item.get<int32_t>());
    }
    if (!valid) {
        return http::error_answer(400, "'tokens' must be a list of token ids of this vocabulary", "tokens");
    }
    return http::json_answer(200, dump({{"prompt", context.tokenizer.decode(ids)}}));
}

}  // namespace tern::server
