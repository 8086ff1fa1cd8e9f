#include "route/relay.h"

#include <fmt/format.h>

#include <boost/asio/strand.hpp>
#include <mutex>
#include <nlohmann/json.hpp>

#include "api/openai_types.h"
#include "api/sse.h"

namespace tern::route {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

bool is_event_stream(std::string_view content_type) { return content_type.rfind("text/event-stream", 0) == 0; }

// What the client gets when no replica answered: 504 for a timeout, 502 for the rest (RFC 9110 15.6.3 / 15.6.5).
int gateway_status(UpstreamFailure failure) { return failure == UpstreamFailure::kTimeout ? 504 : 502; }

}  // namespace

// The state shared by the job (the client's side, on the session's strand) and the upstream call's callbacks (on
// the upstream strand); the mutex orders them. Callbacks hold it by shared_ptr, so the job may go first.
class Relay : public std::enable_shared_from_this<Relay> {
public:
    Relay(boost::asio::io_context& upstream, RelayPlan plan) : upstream_(upstream), plan_(std::move(plan)) {}

    void attempt(std::shared_ptr<Replica> replica);
    void detach();
    http::Delivery delivery() const {
        std::lock_guard lock(mutex_);
        return delivery_;
    }
    void set_listener(const std::function<void()>& listener) {
        std::lock_guard lock(mutex_);
        listener_ = listener;
    }
    bool poll(std::vector<std::string>& events);
    void client_gone();
    http::Answer whole_answer() const;
    http::Headers stream_headers() const;
    void delivered();

private:
    void on_header(int generation, int status, std::string_view content_type);
    void on_body(int generation, std::string_view bytes);
    void on_done(int generation, Replica& replica, UpstreamFailure failure, std::string_view detail);
    void take_event(std::string data);
    bool read_usage(const nlohmann::json& value);
    bool retry_locked(std::unique_lock<std::mutex>& lock);
    void complete(std::unique_lock<std::mutex>& lock, bool ok);
    void fail_locked(int status, const std::string& message);
    void notify(std::unique_lock<std::mutex>& lock);

    boost::asio::io_context& upstream_;
    const RelayPlan plan_;
    mutable std::mutex mutex_;
    std::function<void()> listener_;
    std::shared_ptr<UpstreamCall> call_;
    std::shared_ptr<Replica> replica_;
    std::vector<const Replica*> tried_;
    int generation_ = 0;             // of the current attempt: callbacks of an abandoned one are ignored
    bool body_started_ = false;      // a byte of the current attempt's body arrived
    http::Delivery delivery_ = http::Delivery::kUndecided;
    int status_ = 0;
    std::string content_type_;
    std::string whole_body_;
    api::SseParser sse_;
    std::vector<std::string> events_;
    std::vector<std::string> recorded_;  // every event relayed, when the answer may be kept (plan_.on_complete)
    bool saw_done_ = false;          // the last relayed event was [DONE]
    bool finished_ = false;
    RelayResult result_;
};

void Relay::attempt(std::shared_ptr<Replica> replica) {
    std::unique_lock lock(mutex_);
    replica_ = std::move(replica);
    tried_.push_back(replica_.get());
    const int generation = ++generation_;
    // A retry starts afresh: nothing of the failed attempt reached the client (a stream is never retried).
    body_started_ = false;
    delivery_ = http::Delivery::kUndecided;
    status_ = 0;
    content_type_.clear();
    whole_body_.clear();
    result_.attempts = static_cast<int>(tried_.size());
    result_.replica = replica_->origin();
    replica_->request_started();
    UpstreamRequest request{.base = replica_->url(), .path = plan_.path, .body = plan_.body,
                            .headers = plan_.headers, .timeout = plan_.upstream_timeout,
                            .idle = replica_->idle_connections()};
    auto self = shared_from_this();
    UpstreamEvents events{
        .on_header = [self, generation](int status, std::string_view type) { self->on_header(generation, status, type); },
        .on_body = [self, generation](std::string_view bytes) { self->on_body(generation, bytes); },
        .on_done = [self, generation, replica = replica_](UpstreamFailure failure, std::string_view detail) {
            self->on_done(generation, *replica, failure, detail);
        }};
    if (std::optional<boost::asio::ip::tcp::socket> kept = replica_->idle_connections()->take()) {
        call_ = std::make_shared<UpstreamCall>(std::move(*kept), std::move(request), std::move(events));
    } else {
        call_ = std::make_shared<UpstreamCall>(boost::asio::make_strand(upstream_), std::move(request), std::move(events));
    }
    auto call = call_;
    lock.unlock();
    call->start();
}

void Relay::on_header(int generation, int status, std::string_view content_type) {
    std::unique_lock lock(mutex_);
    if (generation != generation_ || finished_) return;
    // A 5xx before any body, or a replica at its capacity (429): another replica may do better. Only the 5xx counts
    // toward ejecting the replica.
    if (status >= 500 || status == 429) {
        if (status >= 500) replica_->failed();
        if (retry_locked(lock)) return;
    }
    status_ = status;
    content_type_ = std::string(content_type);
    delivery_ = plan_.client_wants_stream && status == 200 && is_event_stream(content_type) ? http::Delivery::kStream
                                                                                            : http::Delivery::kWhole;
    notify(lock);
}

void Relay::on_body(int generation, std::string_view bytes) {
    std::unique_lock lock(mutex_);
    if (generation != generation_ || finished_) return;
    body_started_ = true;
    result_.response_bytes += bytes.size();
    if (delivery_ == http::Delivery::kStream) {
        std::vector<api::SseEvent> parsed;
        sse_.feed(bytes, &parsed);
        if (parsed.empty()) return;
        if (result_.ttft_ms < 0) result_.ttft_ms = ms_since(plan_.arrival);
        for (api::SseEvent& event : parsed) take_event(std::move(event.data));
        return notify(lock);
    }
    if (whole_body_.size() + bytes.size() > plan_.max_whole_bytes) {
        call_->cancel();
        fail_locked(502, fmt::format("the backend's answer is larger than {} bytes", plan_.max_whole_bytes));
        return complete(lock, false);
    }
    whole_body_.append(bytes);
}

void Relay::on_done(int generation, Replica& replica, UpstreamFailure failure, std::string_view detail) {
    replica.request_finished();  // every attempt's end, abandoned or not, releases its replica's slot exactly once
    std::unique_lock lock(mutex_);
    if (generation != generation_ || finished_) return;
    result_.failure = failure;
    result_.failure_detail = std::string(detail);
    if (failure == UpstreamFailure::kNone) {
        if (status_ < 500) replica.answered();
        if (delivery_ == http::Delivery::kWhole && whole_body_.find("\"usage\"") != std::string::npos) {
            read_usage(nlohmann::json::parse(whole_body_, nullptr, false));
        }
        if (delivery_ == http::Delivery::kStream) {
            std::vector<api::SseEvent> last;
            sse_.finish(&last);
            for (api::SseEvent& event : last) take_event(std::move(event.data));
            // An OpenAI stream ends with [DONE]; one that ends without it was cut or was not one: say so.
            if (!saw_done_) {
                events_.push_back(api::error_body(502, "the backend's stream ended without [DONE]").dump());
            }
        }
        finished_ = true;
        result_.status = status_;
        return complete(lock, status_ == 200 && (delivery_ == http::Delivery::kWhole || saw_done_));
    }
    if (failure == UpstreamFailure::kCancelled) {  // the job was dropped unfinished (client_gone() finishes first)
        finished_ = true;
        result_.status = 499;
        return complete(lock, false);  // whoever waits on this answer learns it failed
    }
    replica.failed();
    if (!body_started_ && delivery_ != http::Delivery::kStream && retry_locked(lock)) return;
    if (delivery_ == http::Delivery::kStream) {  // the stream broke: the client gets an error event, then the end
        const nlohmann::json error = api::error_body(502, fmt::format("the backend's stream broke: {}", detail));
        events_.push_back(error.dump());
        finished_ = true;
        result_.status = status_;
        return complete(lock, false);
    }
    fail_locked(gateway_status(failure), fmt::format("the backend {} failed ({}): {}", replica.origin(),
                                                     to_string(failure), detail));
    complete(lock, false);
}

// Only events that mention usage are parsed, once: the rest are relayed as they came.
void Relay::take_event(std::string data) {
    saw_done_ = data == "[DONE]";
    if (data.find("\"usage\"") != std::string::npos) {
        const nlohmann::json chunk = nlohmann::json::parse(data, nullptr, false);
        const bool usage_only = read_usage(chunk) && chunk.contains("choices") &&
                                chunk["choices"].empty();
        if (usage_only && plan_.strip_usage_chunk) return;  // the router asked for it, the client did not
    }
    if (plan_.on_complete) recorded_.push_back(data);
    events_.push_back(std::move(data));
}

// Reads total_tokens from a body or chunk with a usage object; returns whether it had one.
bool Relay::read_usage(const nlohmann::json& value) {
    if (!value.is_object() || !value.contains("usage") || !value["usage"].is_object()) return false;
    const nlohmann::json& usage = value["usage"];
    if (usage.contains("total_tokens") && usage["total_tokens"].is_number()) {
        result_.usage_tokens = usage["total_tokens"].get<double>();
    }
    return true;
}

// Starts another attempt when one is allowed and a replica is left; the lock is released for it.
bool Relay::retry_locked(std::unique_lock<std::mutex>& lock) {
    if (static_cast<int>(tried_.size()) >= plan_.max_attempts || !plan_.pick) return false;
    std::shared_ptr<Replica> next = plan_.pick(tried_);
    if (!next) return false;
    if (call_) call_->cancel();
    ++generation_;  // the abandoned call's callbacks are ignored from here (its on_done still releases its slot)
    lock.unlock();
    attempt(std::move(next));
    return true;
}

void Relay::fail_locked(int status, const std::string& message) {
    finished_ = true;
    delivery_ = http::Delivery::kWhole;
    status_ = status;
    content_type_ = "application/json";
    whole_body_ = api::error_body(status, message).dump();
    result_.status = status;
}

// The answer is finished: whoever waits on it (merged followers, the cache) learns how, then the session.
void Relay::complete(std::unique_lock<std::mutex>& lock, bool ok) {
    std::shared_ptr<Recording> recording;
    if (ok && plan_.on_complete) {
        recording = std::make_shared<Recording>();
        recording->status = status_;
        recording->content_type = content_type_.empty() ? "application/json" : content_type_;
        recording->streamed = delivery_ == http::Delivery::kStream;
        if (recording->streamed) {
            recording->events = recorded_;
        } else {
            recording->body = whole_body_;
        }
    }
    const auto on_complete = plan_.on_complete;
    const std::function<void()> listener = listener_;
    lock.unlock();
    if (on_complete) on_complete(std::move(recording));
    if (listener) listener();
}

void Relay::notify(std::unique_lock<std::mutex>& lock) {
    const std::function<void()> listener = listener_;
    lock.unlock();
    if (listener) listener();
}

bool Relay::poll(std::vector<std::string>& events) {
    std::lock_guard lock(mutex_);
    for (std::string& event : events_) events.push_back(std::move(event));
    events_.clear();
    return finished_;
}

void Relay::client_gone() {
    std::unique_lock lock(mutex_);
    if (finished_) return;
    finished_ = true;
    // A client that closes as soon as it has read [DONE] may do so before the replica's last bytes (the chunked
    // body's end) reached the router: it had the whole answer.
    const bool had_all = delivery_ == http::Delivery::kStream && saw_done_ && events_.empty();
    if (!had_all) {
        result_.status = 499;
        result_.failure = UpstreamFailure::kCancelled;
    } else {
        result_.status = status_;
    }
    const std::shared_ptr<UpstreamCall> call = call_;
    listener_ = nullptr;  // the session is done with this answer
    complete(lock, had_all && status_ == 200);
    if (call) call->cancel();  // the replica sees the connection close and aborts the request
}

void Relay::detach() {
    std::shared_ptr<UpstreamCall> call;
    {
        std::lock_guard lock(mutex_);
        listener_ = nullptr;
        if (!finished_) call = call_;
    }
    if (call) call->cancel();
}

http::Answer Relay::whole_answer() const {
    std::lock_guard lock(mutex_);
    http::Answer answer{status_, content_type_.empty() ? "application/json" : content_type_, whole_body_, {}};
    http::add_retry_after_if_refused(answer);
    answer.headers.emplace_back("x-request-id", plan_.request_id);
    return answer;
}

http::Headers Relay::stream_headers() const { return {{"x-request-id", plan_.request_id}}; }

void Relay::delivered() {
    RelayResult result;
    {
        std::lock_guard lock(mutex_);
        result_.streamed = delivery_ == http::Delivery::kStream;
        result_.total_ms = ms_since(plan_.arrival);
        if (result_.ttft_ms < 0 && result_.status < 400) result_.ttft_ms = result_.total_ms;
        result = result_;
    }
    if (plan_.on_delivered) plan_.on_delivered(result);
}

RelayJob::RelayJob(boost::asio::io_context& upstream, RelayPlan plan, std::shared_ptr<Replica> first)
    : relay_(std::make_shared<Relay>(upstream, std::move(plan))) {
    relay_->attempt(std::move(first));
}

RelayJob::~RelayJob() { relay_->detach(); }

http::Delivery RelayJob::delivery() const { return relay_->delivery(); }
void RelayJob::set_listener(const std::function<void()>& listener) { relay_->set_listener(listener); }
bool RelayJob::poll(std::vector<std::string>& events) { return relay_->poll(events); }
void RelayJob::client_gone() { relay_->client_gone(); }
http::Answer RelayJob::whole_answer() const { return relay_->whole_answer(); }
http::Headers RelayJob::stream_headers() const { return relay_->stream_headers(); }
void RelayJob::delivered() { relay_->delivered(); }

}  // namespace tern::route
