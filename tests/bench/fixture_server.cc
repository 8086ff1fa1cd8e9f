#include "bench/fixture_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <sstream>

namespace tern::testing {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

constexpr int64_t kCreated = 1'700'000'000;

int64_t count_prompt_tokens(const Json& body) {
    auto words = [](const std::string& text) {
        std::istringstream stream(text);
        std::string word;
        int64_t count = 0;
        while (stream >> word) ++count;
        return count;
    };
    if (body.contains("prompt")) {
        if (body["prompt"].is_array()) return static_cast<int64_t>(body["prompt"].size());
        if (body["prompt"].is_string()) return words(body["prompt"].get<std::string>());
    }
    int64_t count = 0;
    if (body.contains("messages")) {
        for (const Json& message : body["messages"]) count += words(message.value("content", std::string()));
    }
    return count;
}

// One streamed response: what to send, and the encoder for this server flavor and endpoint.
struct Stream {
    FixtureOptions options;
    bool chat = false;
    bool include_usage = false;
    int64_t prompt_tokens = 0;
    int64_t num_tokens = 0;
    std::string finish_reason = "length";
    size_t record_idx = 0;

    Json base(const std::string& object) const {
        return {{"id", chat ? "chatcmpl-1" : "cmpl-1"}, {"object", object}, {"created", kCreated},
                {"model", options.model_id}};
    }

    std::string token_chunk(int64_t first_token, int64_t count, bool last) const {
        std::string text;
        for (int64_t token = first_token; token < first_token + count; ++token) text += fmt::format(" t{}", token);
        const Json finish = last && options.flavor == ServerFlavor::kVllm ? Json(finish_reason) : Json();
        Json choice = {{"index", 0}, {"finish_reason", finish}};
        if (chat) {
            choice["delta"] = {{"content", text}};
        } else {
            choice["text"] = text;
        }
        choice["logprobs"] = nullptr;
        Json chunk = chat ? base("chat.completion.chunk") : base("text_completion");
        chunk["choices"] = Json::array({choice});
        if (options.flavor == ServerFlavor::kVllm) chunk["usage"] = nullptr;
        if (options.flavor == ServerFlavor::kLlamaCpp) chunk["system_fingerprint"] = "b0-fixture";
        return "data: " + chunk.dump() + "\n\n";
    }

    Json usage() const {
        return {{"prompt_tokens", prompt_tokens}, {"completion_tokens", num_tokens},
                {"total_tokens", prompt_tokens + num_tokens}};
    }

    std::string role_chunk() const {
        Json delta = {{"role", "assistant"}, {"content", options.flavor == ServerFlavor::kVllm ? Json("") : Json()}};
        Json chunk = base("chat.completion.chunk");
        chunk["choices"] = Json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", nullptr}}});
        return "data: " + chunk.dump() + "\n\n";
    }

    // llama.cpp: a finish chunk (usage and timings included); vLLM: a usage-only chunk when asked for.
    std::string closing_chunks() const {
        std::string out;
        if (options.flavor == ServerFlavor::kLlamaCpp) {
            Json choice = {{"index", 0}, {"finish_reason", finish_reason}};
            if (chat) {
                choice["delta"] = Json::object();
            } else {
                choice["text"] = "";
            }
            Json chunk = chat ? base("chat.completion.chunk") : base("text_completion");
            chunk["choices"] = Json::array({choice});
            if (options.usage == UsageMode::kReported) {
                chunk["usage"] = usage();
                chunk["timings"] = {{"prompt_n", prompt_tokens}, {"predicted_n", num_tokens}};
            }
            out += "data: " + chunk.dump() + "\n\n";
        } else if (include_usage && options.usage == UsageMode::kReported) {
            Json chunk = chat ? base("chat.completion.chunk") : base("text_completion");
            chunk["choices"] = Json::array();
            chunk["usage"] = usage();
            out += "data: " + chunk.dump() + "\n\n";
        }
        return out + "data: [DONE]\n\n";
    }
};

}  // namespace

struct FixtureServer::Impl {
    FixtureOptions options;
    httplib::Server server;
    std::thread thread;
    mutable std::mutex mutex;
    std::vector<ServedRequest> served;
    std::atomic<int64_t> in_flight{0};
    int64_t num_received = 0;
    // Server-side latency totals, exposed at /metrics as Prometheus histograms (sum and count; one +Inf bucket).
    double ttft_sum = 0;
    int64_t ttft_count = 0;
    double itl_sum = 0;
    int64_t itl_count = 0;
    FixtureServer* owner = nullptr;

    void record_chunk(size_t idx, int64_t tokens) {
        std::lock_guard lock(mutex);
        served[idx].token_chunk_times.push_back(Clock::now());
        served[idx].tokens = tokens;
    }

    void enter() {
        const int64_t now = ++in_flight;
        int64_t seen = owner->max_concurrent_.load();
        while (now > seen && !owner->max_concurrent_.compare_exchange_weak(seen, now)) {
        }
    }

    bool write(httplib::DataSink& sink, const std::string& text) { return sink.write(text.data(), text.size()); }

    // Writes the whole stream, pacing token chunks at received + ttft + k * itl.
    bool stream(const std::shared_ptr<Stream>& state, Clock::time_point received, httplib::DataSink& sink) {
        const FixtureOptions& opts = state->options;
        if (state->chat && opts.flavor == ServerFlavor::kLlamaCpp && !write(sink, state->role_chunk())) return false;
        int64_t sent = 0;
        for (int64_t chunk_idx = 0; sent < state->num_tokens; ++chunk_idx) {
            std::this_thread::sleep_until(received + opts.ttft + opts.itl * chunk_idx);
            if (opts.break_after_tokens >= 0 && sent >= opts.break_after_tokens) return false;
            if (opts.error_after_tokens >= 0 && sent >= opts.error_after_tokens) {
                write(sink, "data: {\"error\":{\"message\":\"fixture failure\",\"type\":\"server_error\",\"code\":500}}"
                            "\n\n");
                sink.done();
                return true;
            }
            if (chunk_idx == 0 && state->chat && opts.flavor == ServerFlavor::kVllm) write(sink, state->role_chunk());
            const int64_t count = std::min<int64_t>(opts.tokens_per_chunk, state->num_tokens - sent);
            if (!write(sink, state->token_chunk(sent, count, sent + count == state->num_tokens))) return false;
            sent += count;
            record_chunk(state->record_idx, sent);
        }
        observe(state->record_idx);
        write(sink, state->closing_chunks());
        sink.done();
        return true;
    }

    void observe(size_t idx) {
        std::lock_guard lock(mutex);
        const ServedRequest& request = served[idx];
        if (request.token_chunk_times.empty()) return;
        auto seconds = [](Clock::duration duration) { return std::chrono::duration<double>(duration).count(); };
        ttft_sum += seconds(request.token_chunk_times.front() - request.received);
        ++ttft_count;
        itl_sum += seconds(request.token_chunk_times.back() - request.token_chunk_times.front());
        itl_count += static_cast<int64_t>(request.token_chunk_times.size()) - 1;
    }

    std::string metrics_text() const {
        std::lock_guard lock(mutex);
        std::string text;
        const std::pair<const char*, std::pair<double, int64_t>> histograms[] = {
            {"fixture:time_to_first_token_seconds", {ttft_sum, ttft_count}},
            {"fixture:inter_token_latency_seconds", {itl_sum, itl_count}},
        };
        for (const auto& [name, totals] : histograms) {
            text += fmt::format("# HELP {0} Server-side latency.\n# TYPE {0} histogram\n"
                                "{0}_bucket{{le=\"+Inf\",model_name=\"{3}\"}} {2}\n"
                                "{0}_sum{{model_name=\"{3}\"}} {1}\n{0}_count{{model_name=\"{3}\"}} {2}\n",
                                name, totals.first, totals.second, options.model_id);
        }
        return text + "# TYPE fixture:requests_total counter\nfixture:requests_total " + std::to_string(num_received) +
               "\n";
    }

    void handle(const httplib::Request& request, httplib::Response& response, bool chat) {
        const Clock::time_point received = Clock::now();
        const Json body = Json::parse(request.body, nullptr, false);
        auto state = std::make_shared<Stream>();
        state->options = options;
        state->chat = chat;
        {
            std::lock_guard lock(mutex);
            ++num_received;
            std::vector<std::pair<std::string, std::string>> headers(request.headers.begin(), request.headers.end());
            served.push_back({request.path, body, std::move(headers), received, {}, 0});
            state->record_idx = served.size() - 1;
            if (options.fail_every > 0 && num_received % options.fail_every == 0) {
                response.status = options.fail_status;
                response.set_content(R"({"object":"error","message":"fixture overloaded","type":"ServiceUnavailable",)"
                                     R"("code":503})",
                                     "application/json");
                return;
            }
        }
        state->include_usage = body.contains("stream_options") && body["stream_options"].value("include_usage", false);
        state->prompt_tokens = count_prompt_tokens(body);
        state->num_tokens = body.value("max_tokens", options.default_max_tokens);
        if (!body.value("ignore_eos", false) && options.eos_after >= 0 && options.eos_after < state->num_tokens) {
            state->num_tokens = options.eos_after;
            state->finish_reason = "stop";
        }
        enter();
        response.set_chunked_content_provider(
            "text/event-stream",
            [this, state, received](size_t, httplib::DataSink& sink) {
                const bool ok = stream(state, received, sink);
                --in_flight;
                return ok;
            });
    }
};

FixtureServer::FixtureServer(FixtureOptions options) : impl_(std::make_unique<Impl>()) {
    impl_->options = std::move(options);
    impl_->owner = this;
    httplib::Server& server = impl_->server;
    const int num_threads = impl_->options.num_threads;
    server.new_task_queue = [num_threads] { return new httplib::ThreadPool(static_cast<size_t>(num_threads)); };
    server.set_tcp_nodelay(true);
    server.set_keep_alive_max_count(100'000);
    server.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
        impl_->handle(req, res, false);
    });
    server.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
        impl_->handle(req, res, true);
    });
    server.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        const Json body = {{"object", "list"},
                           {"data", Json::array({{{"id", impl_->options.model_id}, {"object", "model"}}})}};
        res.set_content(body.dump(), "application/json");
    });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(impl_->metrics_text(), "text/plain; version=0.0.4");
    });
    port_ = server.bind_to_any_port("127.0.0.1");
    impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs, so a server destroyed right away would never stop otherwise.
    for (int attempt = 0; attempt < 5000 && !server.is_running(); ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

FixtureServer::~FixtureServer() {
    impl_->server.stop();
    impl_->thread.join();
}

std::vector<ServedRequest> FixtureServer::requests() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->served;
}

}  // namespace tern::testing
