#include "route/gateway.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "base/log.h"
#include "dashboard/page.h"
#include "route/merged_requests.h"
#include "route/relay.h"
#include "route/tenants.h"
#include "route/two_tier.h"

namespace tern::route {
namespace {

using nlohmann::json;

std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

bool is_generation_path(std::string_view path) { return path == "/v1/completions" || path == "/v1/chat/completions"; }

// A request id for requests that come without one: 16 random hex digits.
std::string make_request_id() {
    thread_local std::mt19937_64 generator{std::random_device{}()};
    return fmt::format("{:016x}", generator());
}

// A body nested deeper than this is refused: nlohmann's dump() recurses, and the router re-serializes every body it
// relays, so a hostile body of a million '[' would otherwise exhaust the stack. OpenAI bodies nest a few levels.
constexpr size_t kMaxJsonDepth = 64;

size_t json_depth(const json& root) {
    size_t deepest = 0;
    std::vector<std::pair<const json*, size_t>> pending = {{&root, 1}};
    while (!pending.empty()) {
        const auto [value, depth] = pending.back();
        pending.pop_back();
        deepest = std::max(deepest, depth);
        if (deepest > kMaxJsonDepth) break;
        if (value->is_structured()) {
            for (const json& child : *value) pending.emplace_back(&child, depth + 1);
        }
    }
    return deepest;
}

// Strings, lists of them (prompts) and content parts ({"type": "text", "text": ...}); two levels are all there are.
void append_text(const json& value, std::string& out, int depth = 0) {
    if (value.is_string()) {
        out += value.get_ref<const std::string&>();
    } else if (value.is_array() && depth < 2) {
        for (const json& item : value) {
            if (item.is_object() && item.contains("text")) {
                append_text(item["text"], out, depth + 1);
            } else {
                append_text(item, out, depth + 1);
            }
        }
    }
}

// What a request reserves of its tenant's token budget when it names no max_tokens: vLLM's and OpenAI's chat have no
// default limit, so the reservation is a guess that the usage reported afterwards corrects.
constexpr double kDefaultReservedCompletionTokens = 256;

double completion_tokens_asked(const json& body) {
    for (const char* field : {"max_completion_tokens", "max_tokens"}) {
        if (auto found = body.find(field); found != body.end() && found->is_number()) return found->get<double>();
    }
    return kDefaultReservedCompletionTokens;
}

std::string model_list(const RouteConfig& config) {
    std::string names;
    for (const ModelRoute& model : config.models) names += (names.empty() ? "" : ", ") + model.name;
    return names;
}

}  // namespace

std::string prompt_text(const json& body) {
    std::string text;
    if (auto prompt = body.find("prompt"); prompt != body.end()) append_text(*prompt, text);
    if (auto messages = body.find("messages"); messages != body.end() && messages->is_array()) {
        for (const json& message : *messages) {
            if (message.is_object() && message.contains("content")) append_text(message["content"], text);
        }
    }
    return text;
}

Gateway::Gateway(RouteConfig config, AccessLog access_log)
    : upstream_work_(boost::asio::make_work_guard(upstream_)),
      access_log_(std::move(access_log)),
      routing_(std::make_shared<const Routing>(std::move(config))) {
    metrics_.watch(routing_);
    upstream_thread_ = std::thread([this] {
        try {
            upstream_.run();
        } catch (const std::exception& error) {  // a thread's last guard: relays stop, the log says why
            log_error("route: the upstream I/O thread stopped: {}", error.what());
        }
    });
}

Gateway::~Gateway() {
    upstream_work_.reset();
    upstream_.stop();
    upstream_thread_.join();
}

void Gateway::reload(RouteConfig config) {
    auto routing = std::make_shared<const Routing>(std::move(config));
    metrics_.watch(routing);
    std::lock_guard lock(routing_mutex_);
    routing_ = std::move(routing);
}

std::shared_ptr<const Routing> Gateway::routing() const {
    std::lock_guard lock(routing_mutex_);
    return routing_;
}

http::Answer Gateway::refuse(int status, const std::string& message, const std::string& param) const {
    metrics_.refused(status);
    return http::error_answer(status, message, param);
}

// 401 without a valid key (when tenants are configured); `tenant` is set to the key's tenant.
std::optional<http::Answer> Gateway::refusal(const Routing& routing, const http::Request& request,
                                             std::optional<size_t>* tenant) const {
    const std::vector<TenantConfig>& tenants = routing.config().tenants;
    if (tenants.empty()) return std::nullopt;
    *tenant = find_tenant(tenants, bearer_key(request.header("authorization")));
    if (*tenant) return std::nullopt;
    http::Answer answer = refuse(401, "a valid API key is required: send 'Authorization: Bearer KEY'");
    answer.headers.emplace_back("WWW-Authenticate", "Bearer");
    return answer;
}

http::Answer Gateway::models_answer(const Routing& routing) const {
    json data = json::array();
    for (const ModelRoute& model : routing.config().models) {
        data.push_back({{"id", model.name}, {"object", "model"}, {"created", 0}, {"owned_by", "tern-route"}});
    }
    return http::json_answer(200, dump({{"object", "list"}, {"data", std::move(data)}}));
}

std::optional<http::Answer> Gateway::answer_at_once(const http::Request& request) const {
    const bool get = request.method == "GET";
    if (get && request.path == "/health") return http::json_answer(200, R"({"status":"ok"})");
    const std::shared_ptr<const Routing> routing = this->routing();
    if (get && request.path == "/ready") {
        return routing->any_healthy() ? http::json_answer(200, R"({"status":"ready"})")
                                      : http::json_answer(503, R"({"status":"no healthy replica"})");
    }
    if (get && request.path == "/metrics") return http::Answer{200, "text/plain; version=0.0.4", metrics_.render(), {}};
    // As tern serve's: the page reads /metrics and the access log's last records, no key needed (figures only).
    if (get && request.path == "/dashboard") {
        return http::Answer{200, "text/html; charset=utf-8", std::string(dashboard::page_html()), {}};
    }
    if (get && request.path == "/dashboard/requests") return http::json_answer(200, recent_.render());
    if (request.method == "POST" && request.path == "/admin/weights") return std::nullopt;  // its own key, in route()
    const bool known = (get && request.path == "/v1/models") || (request.method == "POST" && is_generation_path(request.path));
    if (!known) return refuse(404, "no such endpoint: " + request.method + " " + request.path);
    std::optional<size_t> tenant;
    if (auto refused = refusal(*routing, request, &tenant)) return refused;
    if (request.path == "/v1/models") return models_answer(*routing);
    return std::nullopt;
}

http::RouteResult Gateway::route(const http::Request& request) const {
    const auto arrival = std::chrono::steady_clock::now();
    std::shared_ptr<const Routing> routing = this->routing();
    if (request.path == "/admin/weights") return set_weights(*routing, request);
    std::optional<size_t> tenant;
    if (auto refused = refusal(*routing, request, &tenant)) return std::move(*refused);
    return relay(std::move(routing), request, tenant, arrival);
}

// POST /admin/weights {"model": "llama", "weights": {"stable": 100, "next": 0}}: a promotion or a rollback, for the
// next request on.
http::Answer Gateway::set_weights(const Routing& routing, const http::Request& request) const {
    const std::optional<Sha256>& admin_key = routing.config().admin_key_sha256;
    if (!admin_key) return refuse(404, "the admin endpoint needs an admin key: set [admin] key_sha256 in the configuration");
    if (!key_matches(*admin_key, bearer_key(request.header("authorization")))) {
        return refuse(401, "the admin key is required: send 'Authorization: Bearer ADMIN_KEY'");
    }
    const json body = json::parse(request.body, nullptr, false);
    if (!body.is_object() || !body.contains("model") || !body["model"].is_string() || !body.contains("weights") ||
        !body["weights"].is_object()) {
        return refuse(400, R"(expected {"model": NAME, "weights": {VERSION: WEIGHT, ...}})");
    }
    std::map<std::string, double> weights;
    for (const auto& [version, weight] : body["weights"].items()) {
        if (!weight.is_number()) return refuse(400, fmt::format("the weight of '{}' must be a number", version), "weights");
        weights[version] = weight.get<double>();
    }
    const std::string model = body["model"].get<std::string>();
    const Status status = routing.set_weights(model, weights);
    if (!status.is_ok()) return refuse(status.code() == StatusCode::kNotFound ? 404 : 400, status.message());
    log_info("admin: the weights of '{}' are now {}", model, dump(body["weights"]));
    return http::json_answer(200, dump({{"model", model}, {"weights", body["weights"]}}));
}

// A relayable request: its body, model and tenant checked.
struct Gateway::Incoming {
    std::string path;
    json body;
    std::string model_name;
    const ModelRoute* model = nullptr;
    const TenantConfig* tenant = nullptr;
    std::optional<size_t> tenant_index;
    std::string text;        // the prompt's text (length estimate, prefix affinity)
    std::string request_id;
    std::string sticky;      // what keeps a client on its canary version
    bool stream = false;
};

std::variant<Gateway::Incoming, http::Answer> Gateway::check(const Routing& routing, const http::Request& request,
                                                              std::optional<size_t> tenant) const {
    Incoming incoming{.path = request.path, .body = json::parse(request.body, nullptr, /*allow_exceptions=*/false),
                      .tenant_index = tenant};
    json& body = incoming.body;
    if (body.is_discarded() || !body.is_object()) {
        return refuse(400, "the request body must be a JSON object (valid JSON, valid UTF-8)");
    }
    if (json_depth(body) > kMaxJsonDepth) {
        return refuse(400, fmt::format("the request body nests deeper than {} levels", kMaxJsonDepth));
    }
    const auto model_field = body.find("model");
    if (model_field == body.end() || !model_field->is_string()) return refuse(400, "'model' must be a string", "model");
    incoming.model_name = model_field->get<std::string>();
    const RouteConfig& config = routing.config();
    incoming.model = config.find_model(incoming.model_name);
    incoming.tenant = tenant ? &config.tenants[*tenant] : nullptr;
    const std::vector<std::string>* allowed = incoming.tenant ? &incoming.tenant->models : nullptr;
    if (incoming.model == nullptr || (allowed != nullptr && !allowed->empty() &&
                                      std::find(allowed->begin(), allowed->end(), incoming.model_name) == allowed->end())) {
        return refuse(404, fmt::format("the model '{}' does not exist or is not yours; ask for one of: {}",
                                       incoming.model_name, model_list(config)), "model");
    }
    incoming.text = prompt_text(body);
    incoming.request_id = request.header("x-request-id").empty() ? make_request_id()
                                                                 : std::string(request.header("x-request-id"));
    incoming.stream = body.value("stream", false);
    return incoming;
}

// The tenant's budgets (429 with the bucket's Retry-After when over).
std::optional<http::Answer> Gateway::admit(const Routing& routing, const Incoming& incoming,
                                           Admission& admission) const {
    admission = Admission{.admitted = true};
    if (!incoming.tenant_index) return std::nullopt;
    const double tokens = estimate_tokens(incoming.text.size()) + completion_tokens_asked(incoming.body);
    admission = routing.limits().admit(*incoming.tenant_index, tokens, std::chrono::steady_clock::now());
    if (admission.admitted) return std::nullopt;
    http::Answer answer = refuse(admission.status, admission.message);
    metrics_.tenant_answered(incoming.tenant->name, admission.status, -1);
    http::set_retry_after(answer, std::max(1, static_cast<int>(std::ceil(admission.retry_after_s))));
    return answer;
}

http::RouteResult Gateway::relay(std::shared_ptr<const Routing> routing, const http::Request& request,
                                 std::optional<size_t> tenant, std::chrono::steady_clock::time_point arrival) const {
    auto checked = check(*routing, request, tenant);
    if (auto* refused = std::get_if<http::Answer>(&checked)) return std::move(*refused);
    Incoming incoming = std::move(std::get<Incoming>(checked));
    Admission admission;
    if (auto refused = admit(*routing, incoming, admission)) return std::move(*refused);
    // Canary versions stick to the tenant (or, without tenants, to the client's own key or nothing).
    incoming.sticky = incoming.tenant != nullptr ? incoming.tenant->name
                                                 : std::string(bearer_key(request.header("authorization")));
    if (incoming.sticky.empty()) incoming.sticky = incoming.request_id;
    std::optional<std::string> key;
    if (routing->config().cache.enabled) {
        key = cache_key(incoming.body, request.path, incoming.tenant ? incoming.tenant->name : std::string());
    }
    if (incoming.model->two_tier) return start_two_tier(routing, std::move(incoming), request, admission, arrival);
    if (!key) return start(routing, std::move(incoming), request, admission, arrival, std::nullopt);
    // Served without a replica: charged no tokens.
    auto answered_here = [routing, admission, tenant = incoming.tenant_index](int) {
        if (tenant) routing->limits().finish(*tenant, admission, 0, std::chrono::steady_clock::now());
    };
    if (auto hit = routing->cache().find(*key, std::chrono::steady_clock::now())) {
        metrics_.cache_hit();
        return replay(std::move(hit), answered_here);
    }
    auto fallback = [this, routing, incoming, request, admission, arrival] {
        return start(routing, incoming, request, admission, arrival, std::nullopt);
    };
    if (auto follower = routing->merged().follow_or_lead(*key, fallback, answered_here)) {
        metrics_.merged();
        return follower;
    }
    return start(routing, std::move(incoming), request, admission, arrival, key);
}

// Relays to a replica of the decided pool. `lead_key`: others may wait on this answer, and it may be cached.
std::unique_ptr<http::PendingAnswer> Gateway::start(const std::shared_ptr<const Routing>& routing, Incoming incoming,
                                                    const http::Request& request, const Admission& admission,
                                                    std::chrono::steady_clock::time_point arrival,
                                                    const std::optional<std::string>& lead_key) const {
    const RouteDecision decision = routing->decide(*incoming.model, request, incoming.sticky,
                                                   estimate_tokens(incoming.text.size()));
    std::shared_ptr<Replica> replica = decision.pool->pick(incoming.text, {});
    if (!replica) {
        if (incoming.tenant_index) {
            routing->limits().finish(*incoming.tenant_index, admission, 0, std::chrono::steady_clock::now());
        }
        if (lead_key) routing->merged().finish(*lead_key, nullptr);
        const http::Answer refused = refuse(503, fmt::format("no replica of pool '{}' is healthy; retry shortly",
                                                             decision.pool->config().name));
        return replay(std::make_shared<Recording>(Recording{.status = refused.status, .body = refused.body}));
    }
    RelayPlan plan = make_plan(routing, incoming, decision, admission, arrival);
    if (lead_key) {
        plan.on_complete = [routing, key = *lead_key](std::shared_ptr<const Recording> recording) {
            if (recording) routing->cache().store(key, recording, std::chrono::steady_clock::now());
            routing->merged().finish(key, std::move(recording));
        };
    }
    return std::make_unique<RelayJob>(upstream_, std::move(plan), std::move(replica));
}

// The small tier answers first, whole and with logprobs; judge() decides whether its answer stands or the request
// goes on to the large tier, relayed as the client asked.
std::unique_ptr<http::PendingAnswer> Gateway::start_two_tier(const std::shared_ptr<const Routing>& routing,
                                                             Incoming incoming, const http::Request& request,
                                                             const Admission& admission,
                                                             std::chrono::steady_clock::time_point arrival) const {
    const TwoTierConfig& tiers = *incoming.model->two_tier;
    const std::string model = incoming.model_name;
    auto escalate = [this, routing, incoming, request, admission, arrival]() {
        return start(routing, incoming, request, admission, arrival, std::nullopt);
    };
    Pool* small = routing->pool(tiers.small_pool);
    std::shared_ptr<Replica> replica = small->pick(incoming.text, {});
    if (!replica) {
        metrics_.escalated(model, "small unavailable");
        return escalate();
    }
    auto answer = std::make_shared<DeferredAnswer>(escalate);
    const bool chat = incoming.path == "/v1/chat/completions";
    Incoming small_incoming = incoming;
    small_incoming.body = small_tier_body(incoming.body, chat);
    small_incoming.stream = false;
    small_incoming.tenant_index.reset();  // the client's budget is charged once, by whichever answer it gets
    const RouteDecision decision{small, "small", "two_tier"};
    RelayPlan plan = make_plan(routing, small_incoming, decision, Admission{.admitted = true}, arrival);
    const std::string tenant = incoming.tenant ? incoming.tenant->name : std::string();
    plan.on_complete = [this, answer, tiers, model, tenant, client_body = incoming.body, chat](
                           std::shared_ptr<const Recording> recording) {
        const nlohmann::json small_answer = recording ? json::parse(recording->body, nullptr, false) : json();
        const Verdict verdict = recording ? judge(small_answer, tiers) : Verdict{.escalate = true, .reason = "small failed"};
        const double tokens = small_answer.contains("usage") && small_answer["usage"].is_object()
                                  ? small_answer["usage"].value("total_tokens", -1.0)
                                  : -1.0;
        metrics_.small_tier_answered(model, tiers, tokens, !verdict.escalate);
        if (!verdict.escalate && !tenant.empty()) metrics_.tenant_answered(tenant, 200, tokens);
        if (verdict.escalate) {
            metrics_.escalated(model, verdict.reason);
            return answer->resolve(nullptr);
        }
        answer->resolve(std::make_shared<Recording>(client_answer(small_answer, client_body, chat)));
    };
    auto small_job = std::make_unique<RelayJob>(upstream_, std::move(plan), std::move(replica));
    auto finished_small = [routing, admission, tenant = incoming.tenant_index](int) {
        if (tenant) routing->limits().finish(*tenant, admission, -1, std::chrono::steady_clock::now());
    };
    return deferred_job(std::move(answer), finished_small, std::move(small_job));
}

namespace {

// Asks a stream for its usage (stream_options.include_usage) when the client did not; returns whether it did, so that
// the relay drops the usage chunk the client did not ask for. A malformed stream_options is the replica's to refuse.
bool ask_stream_usage(json& body) {
    const auto options = body.find("stream_options");
    if (options != body.end() && (!options->is_object() || options->value("include_usage", false))) return false;
    body["stream_options"]["include_usage"] = true;
    return true;
}

// The access log's record of one relayed request.
json access_record(const std::string& request_id, const std::string& tenant, const std::string& model,
                   const RouteDecision& decision, const RelayResult& result) {
    return json({{"event", "request"}, {"request_id", request_id}, {"tenant", tenant}, {"model", model},
                 {"version", decision.version}, {"pool", decision.pool->config().name}, {"reason", decision.reason},
                 {"replica", result.replica}, {"status", result.status}, {"attempts", result.attempts},
                 {"stream", result.streamed}, {"ttft_ms", result.ttft_ms}, {"total_ms", result.total_ms},
                 {"usage_tokens", result.usage_tokens}, {"failure", to_string(result.failure)}});
}

}  // namespace

RelayPlan Gateway::make_plan(const std::shared_ptr<const Routing>& routing, Incoming& incoming,
                             const RouteDecision& decision, const Admission& admission,
                             std::chrono::steady_clock::time_point arrival) const {
    json& body = incoming.body;
    if (!decision.pool->config().upstream_model.empty()) body["model"] = decision.pool->config().upstream_model;
    RelayPlan plan{.request_id = incoming.request_id, .path = incoming.path,
                   .headers = {{"x-request-id", incoming.request_id}},
                   .client_wants_stream = incoming.stream, .arrival = arrival,
                   .upstream_timeout = std::chrono::seconds(routing->config().listen.upstream_timeout_s)};
    if (incoming.stream) plan.headers.emplace_back("Accept", "text/event-stream");
    // A stream's usage comes only when asked for: ask, so that the tenant is charged what it used and a large tier's
    // spending is counted.
    const TwoTierConfig* tiers = incoming.model->two_tier ? &*incoming.model->two_tier : nullptr;
    const bool counts_usage = incoming.tenant_index || (tiers && decision.reason != "two_tier");
    if (incoming.stream && counts_usage) plan.strip_usage_chunk = ask_stream_usage(body);
    plan.body = dump(body);
    plan.pick = [routing, pool = decision.pool, text = incoming.text](const std::vector<const Replica*>& tried) {
        return pool->pick(text, tried);
    };
    const std::optional<size_t> tenant = incoming.tenant_index;
    // The small tier's relay is accounted by start_two_tier when it has judged the answer.
    std::optional<TwoTierConfig> large_tier;
    if (tiers && decision.reason != "two_tier") large_tier = *tiers;
    plan.on_delivered = [this, routing, tenant, admission, decision, large_tier, model = incoming.model_name,
                         request_id = incoming.request_id,
                         tenant_name = incoming.tenant ? incoming.tenant->name : std::string()](
                            const RelayResult& result) {
        if (tenant) routing->limits().finish(*tenant, admission, result.usage_tokens, std::chrono::steady_clock::now());
        // A two-tier's small call is the router's: the tenant's request is counted by what answers it.
        const std::string& counted_tenant = decision.reason == "two_tier" ? std::string() : tenant_name;
        metrics_.observe(model, decision.version, decision.pool->config().name, decision.reason, counted_tenant, result);
        if (large_tier && result.status < 400) metrics_.large_tier_answered(model, *large_tier, result.usage_tokens);
        json record = access_record(request_id, tenant_name, model, decision, result);
        if (access_log_) access_log_(dump(record));
        recent_.add(std::move(record));
    };
    return plan;
}

}  // namespace tern::route
