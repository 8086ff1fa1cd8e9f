#include "fixture_backend.h"

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace tern::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

json logprobs_of(const FixtureOptions& options, bool chat) {
    if (chat) return {{"content", json::array({{{"token", options.token_text}, {"logprob", options.logprob}}})}};
    return {{"tokens", {options.token_text}}, {"token_logprobs", {options.logprob}}};
}

}  // namespace

class FixtureBackend::Stream final : public http::PendingAnswer {
public:
    Stream(FixtureBackend& backend, const FixtureOptions& options, const json& body, bool chat)
        : backend_(backend),
          options_(options),
          chat_(chat),
          streamed_(body.value("stream", false)),
          usage_(body.contains("stream_options") && body["stream_options"].value("include_usage", false)),
          model_(body.value("model", std::string("fixture"))),
          mode_(options.mode),
          next_due_(Clock::now()) {
        backend_.active_.fetch_add(1);
    }
    ~Stream() override {
        std::lock_guard lock(mutex_);
        listener_ = nullptr;
    }

    // Emits every chunk that is due; returns whether the answer is finished (or the client left).
    bool tick(Clock::time_point now, Clock::time_point* next_due);

    http::Delivery delivery() const override { return streamed_ ? http::Delivery::kStream : http::Delivery::kWhole; }
    void set_listener(const std::function<void()>& listener) override {
        std::lock_guard lock(mutex_);
        listener_ = listener;
    }
    bool poll(std::vector<std::string>& events) override {
        std::lock_guard lock(mutex_);
        for (std::string& event : events_) events.push_back(std::move(event));
        events_.clear();
        return finished_;
    }
    void client_gone() override {
        std::lock_guard lock(mutex_);
        if (finished_) return;
        finished_ = true;
        gone_ = true;
        backend_.cancelled_.fetch_add(1);
    }
    http::Answer whole_answer() const override {
        std::lock_guard lock(mutex_);
        return http::json_answer(200, whole_);
    }
    void delivered() override { backend_.active_.fetch_sub(1); }

private:
    json chunk(const std::string& text, const json& finish_reason) const {
        json choice = {{"index", 0}, {"finish_reason", finish_reason}, {"logprobs", logprobs_of(options_, chat_)}};
        if (chat_) {
            choice["delta"] = {{"content", text}};
        } else {
            choice["text"] = text;
        }
        return {{"id", "fixture"}, {"object", chat_ ? "chat.completion.chunk" : "text_completion"}, {"created", 0},
                {"model", model_}, {"choices", json::array({choice})}};
    }
    json usage() const { return {{"prompt_tokens", 4}, {"completion_tokens", options_.chunks}, {"total_tokens", 4 + options_.chunks}}; }
    void finish_locked();

    FixtureBackend& backend_;
    const FixtureOptions options_;
    const bool chat_;
    const bool streamed_;
    const bool usage_;
    const std::string model_;
    const FixtureMode mode_;
    mutable std::mutex mutex_;
    std::function<void()> listener_;
    std::vector<std::string> events_;
    std::string whole_;
    int emitted_ = 0;
    Clock::time_point next_due_;
    bool finished_ = false;
    bool gone_ = false;
};

void FixtureBackend::Stream::finish_locked() {
    finished_ = true;
    if (mode_ == FixtureMode::kBrokenSse) return;  // no [DONE], and the events were not JSON
    if (streamed_) {
        if (usage_) {
            json last = chunk("", nullptr);
            last["choices"] = json::array();
            last["usage"] = usage();
            events_.push_back(last.dump());
        }
        events_.push_back("[DONE]");
        return;
    }
    std::string text;
    for (int idx = 0; idx < options_.chunks; ++idx) text += options_.token_text;
    json choice = {{"index", 0}, {"finish_reason", options_.finish_reason}, {"logprobs", logprobs_of(options_, chat_)}};
    if (chat_) {
        choice["message"] = {{"role", "assistant"}, {"content", text}};
    } else {
        choice["text"] = text;
    }
    whole_ = json{{"id", "fixture"}, {"object", chat_ ? "chat.completion" : "text_completion"}, {"created", 0},
                  {"model", model_}, {"choices", json::array({choice})}, {"usage", usage()}}
                 .dump();
}

bool FixtureBackend::Stream::tick(Clock::time_point now, Clock::time_point* next_due) {
    std::function<void()> listener;
    {
        std::lock_guard lock(mutex_);
        if (gone_ || finished_) return true;
        if (mode_ == FixtureMode::kHang) {
            *next_due = now + std::chrono::hours(1);
            return false;
        }
        const auto period = options_.chunks_per_second > 0
                                ? std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                      1.0 / options_.chunks_per_second))
                                : Clock::duration::zero();
        while (!finished_ && next_due_ <= now) {
            ++emitted_;
            const bool last = emitted_ >= options_.chunks;
            if (streamed_) {
                events_.push_back(mode_ == FixtureMode::kBrokenSse ? std::string("{not json")
                                                                   : chunk(options_.token_text, last ? json(options_.finish_reason) : json(nullptr)).dump());
            }
            if (last) finish_locked();
            next_due_ += period;
        }
        *next_due = next_due_;
        listener = listener_;
    }
    if (listener) listener();
    std::lock_guard lock(mutex_);
    return finished_;
}

class FixtureBackend::Handler final : public http::Handler {
public:
    explicit Handler(FixtureBackend& backend) : backend_(backend) {}

    std::optional<http::Answer> answer_at_once(const http::Request& request) const override {
        std::lock_guard lock(backend_.mutex_);
        const FixtureOptions& options = backend_.options_;
        if (request.path == "/health") return http::json_answer(200, R"({"status":"ok"})");
        if (request.path == "/ready") return http::json_answer(options.ready ? 200 : 503, "{}");
        if (request.path == "/metrics") {
            return http::Answer{200, "text/plain; version=0.0.4",
                                fmt::format("# TYPE tern:num_requests_waiting gauge\ntern:num_requests_waiting{{model_name=\"f\"}} {}\n"
                                            "tern:num_requests_running{{model_name=\"f\"}} {}\n"
                                            "tern:kv_cache_usage_perc{{model_name=\"f\"}} {}\n",
                                            options.waiting, backend_.active_.load(), options.kv_usage),
                                {}};
        }
        if (request.path == "/v1/models") return http::json_answer(200, R"({"object":"list","data":[{"id":"fixture"}]})");
        if (request.path != "/v1/completions" && request.path != "/v1/chat/completions") {
            return http::error_answer(404, "no such endpoint");
        }
        return std::nullopt;
    }

    http::RouteResult route(const http::Request& request) const override {
        backend_.requests_.fetch_add(1);
        FixtureOptions options;
        {
            std::lock_guard lock(backend_.mutex_);
            options = backend_.options_;
        }
        if (options.mode == FixtureMode::kStatus500) return http::error_answer(500, "the fixture fails on purpose");
        if (options.mode == FixtureMode::kStatus429) return http::error_answer(429, "the fixture is full on purpose");
        if (options.max_concurrency > 0 && backend_.active_.load() >= options.max_concurrency) {
            return http::error_answer(429, "the fixture is at its concurrency cap");
        }
        const json body = json::parse(request.body, nullptr, false);
        if (body.is_discarded() || !body.is_object()) return http::error_answer(400, "not JSON");
        // max_tokens (what a load generator varies) sets the answer's length when given.
        for (const char* field : {"max_tokens", "max_completion_tokens"}) {
            if (body.contains(field) && body[field].is_number_integer() && body[field].get<int>() > 0) {
                options.chunks = body[field].get<int>();
            }
        }
        if (!options.unsure_marker.empty()) {
            const json& asked = body.contains("messages") ? body["messages"] : body.value("prompt", json(""));
            if (asked.dump().find(options.unsure_marker) != std::string::npos) options.logprob = options.unsure_logprob;
        }
        auto stream = std::make_shared<Stream>(backend_, options, body, request.path == "/v1/chat/completions");
        backend_.add_stream(stream);
        // The HTTP layer owns the answer; the ticker holds it too until it is finished.
        struct Owned final : http::PendingAnswer {
            explicit Owned(std::shared_ptr<Stream> inner) : stream(std::move(inner)) {}
            http::Delivery delivery() const override { return stream->delivery(); }
            void set_listener(const std::function<void()>& listener) override { stream->set_listener(listener); }
            bool poll(std::vector<std::string>& events) override { return stream->poll(events); }
            void client_gone() override { stream->client_gone(); }
            http::Answer whole_answer() const override { return stream->whole_answer(); }
            void delivered() override { stream->delivered(); }
            ~Owned() override { stream->set_listener(nullptr); }
            std::shared_ptr<Stream> stream;
        };
        return std::make_unique<Owned>(std::move(stream));
    }

private:
    FixtureBackend& backend_;
};

FixtureBackend::FixtureBackend(FixtureOptions options) : options_(std::move(options)) {
    handler_ = std::make_unique<Handler>(*this);
    http::ServerOptions server_options;
    server_options.port = 0;
    server_options.io_threads = 1;
    server_options.worker_threads = 1;
    server_options.idle_timeout_s = options_.idle_timeout_s;
    server_ = std::make_unique<http::Server>(server_options, *handler_);
    const Status bound = server_->bind();
    if (!bound.is_ok()) throw std::runtime_error(bound.message());
    port_ = server_->bound_port();
    serving_ = std::thread([this] { server_->serve(); });
    ticker_ = std::thread([this] { ticker(); });
}

FixtureBackend::~FixtureBackend() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    ticker_.join();
    server_->stop();
    serving_.join();
}

void FixtureBackend::add_stream(const std::shared_ptr<Stream>& stream) {
    {
        std::lock_guard lock(mutex_);
        streams_.push_back(stream);
    }
    wake_.notify_all();
}

void FixtureBackend::ticker() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        std::vector<std::shared_ptr<Stream>> streams = streams_;
        lock.unlock();
        const Clock::time_point now = Clock::now();
        Clock::time_point earliest = now + std::chrono::milliseconds(100);
        std::vector<Stream*> done;
        for (const auto& stream : streams) {
            Clock::time_point due = earliest;
            if (stream->tick(now, &due)) {
                done.push_back(stream.get());
            } else {
                earliest = std::min(earliest, due);
            }
        }
        lock.lock();
        std::erase_if(streams_, [&](const auto& stream) { return std::find(done.begin(), done.end(), stream.get()) != done.end(); });
        wake_.wait_until(lock, earliest, [&] { return stopping_ || streams_.size() > streams.size() - done.size(); });
    }
}

void FixtureBackend::set_mode(FixtureMode mode) {
    std::lock_guard lock(mutex_);
    options_.mode = mode;
}

void FixtureBackend::set_ready(bool ready) {
    std::lock_guard lock(mutex_);
    options_.ready = ready;
}

void FixtureBackend::set_load(double waiting, double kv_usage) {
    std::lock_guard lock(mutex_);
    options_.waiting = waiting;
    options_.kv_usage = kv_usage;
}

}  // namespace tern::testing
