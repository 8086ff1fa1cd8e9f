#include "serving/async_engine.h"

#include <fmt/format.h>

#include "base/log.h"
#include "trace/trace.h"

namespace tern::serving {

std::optional<RequestOutput> RequestStream::next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, timeout, [&] { return !outputs_.empty() || closed_; });
    if (outputs_.empty()) return std::nullopt;
    RequestOutput output = std::move(outputs_.front());
    outputs_.pop_front();
    return output;
}

bool RequestStream::closed() const {
    std::lock_guard lock(mutex_);
    return closed_ && outputs_.empty();
}

Status RequestStream::error() const {
    std::lock_guard lock(mutex_);
    return error_;
}

void RequestStream::set_listener(std::function<void()> listener) {
    std::lock_guard lock(listener_mutex_);
    listener_ = std::move(listener);
}

void RequestStream::notify() {
    ready_.notify_all();
    std::lock_guard lock(listener_mutex_);
    if (listener_) listener_();
}

void RequestStream::push(RequestOutput output) {
    {
        std::lock_guard lock(mutex_);
        if (output.finish_reason) closed_ = true;
        outputs_.push_back(std::move(output));
    }
    notify();
}

void RequestStream::fail(Status status) {
    {
        std::lock_guard lock(mutex_);
        error_ = std::move(status);
        closed_ = true;
    }
    notify();
}

AsyncEngine::AsyncEngine(std::unique_ptr<engine::Engine> engine, FinishObserver on_finish, StepObserver on_step,
                         FailureObserver on_failure)
    : engine_(std::move(engine)),
      capacity_(engine_->capacity()),
      config_(engine_->config()),
      on_finish_(std::move(on_finish)),
      on_step_(std::move(on_step)),
      on_failure_(std::move(on_failure)) {
    stats_.engine = engine_->stats();
    thread_ = std::thread([this] { run(); });
}

AsyncEngine::~AsyncEngine() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

bool AsyncEngine::queue_full() const {
    std::lock_guard lock(mutex_);
    return stats_.engine.num_waiting + static_cast<int>(inbox_.size()) >= config_.max_queued_requests;
}

Result<std::shared_ptr<RequestStream>> AsyncEngine::submit(EngineRequest request) {
    std::lock_guard lock(mutex_);
    if (failed_.load()) return Status(StatusCode::kUnavailable, "the engine failed; the server is restarting");
    if (!accepting_.load()) return Status(StatusCode::kUnavailable, "the server is shutting down");
    const int waiting = stats_.engine.num_waiting + static_cast<int>(inbox_.size());
    if (waiting >= config_.max_queued_requests) {
        return Status(StatusCode::kResourceExhausted,
                      fmt::format("the waiting queue is full ({} requests, --max-queued-requests); retry later",
                                  waiting));
    }
    const int64_t prompt_tokens = static_cast<int64_t>(request.prompt.size());
    const int64_t queued = stats_.engine.num_queued_tokens + inbox_tokens_ + prompt_tokens;
    if (queued > config_.max_queued_tokens) {
        return Status(StatusCode::kResourceExhausted,
                      fmt::format("the waiting queue would hold {} prompt tokens, over --max-queued-tokens {}; retry "
                                  "later", queued, config_.max_queued_tokens));
    }
    auto stream = std::make_shared<RequestStream>(request.id);
    inbox_tokens_ += prompt_tokens;
    ++num_streams_;
    inbox_.emplace_back(std::move(request), stream);
    wake_.notify_one();
    return stream;
}

void AsyncEngine::abort(RequestId id) {
    {
        std::lock_guard lock(mutex_);
        aborts_.push_back(id);
    }
    wake_.notify_one();
}

bool AsyncEngine::drain(std::chrono::milliseconds timeout) {
    accepting_.store(false);
    std::unique_lock lock(mutex_);
    if (idle_.wait_for(lock, timeout, [&] { return num_streams_ == 0; })) return true;
    abort_all_ = true;  // out of time: the engine thread fails whatever is left
    lock.unlock();
    wake_.notify_one();
    return false;
}

AsyncEngineStats AsyncEngine::stats() const {
    std::lock_guard lock(mutex_);
    AsyncEngineStats stats = stats_;
    stats.num_inbox = static_cast<int>(inbox_.size());
    return stats;
}

// Moves new requests and aborts into the engine. New requests are added, and the engine's counts published, under
// the lock: otherwise submit() could see a request in neither the inbox nor the counts, admit past the queue limit,
// and the engine would refuse after the client was told 200. A client's abort closes its stream at once; a request
// cut off by the drain timeout fails with kUnavailable (its client did not ask to stop). The engine's own abort
// output (with timings) reaches the finish observer through the next step.
void AsyncEngine::take_inbox() {
    std::vector<RequestId> aborts;
    std::vector<RequestId> shutdown_aborts;
    {
        std::lock_guard lock(mutex_);
        for (auto& [request, stream] : inbox_) {
            const RequestId id = request.id;
            const Status added = engine_->add_request(std::move(request));
            if (added.is_ok()) {
                streams_[id] = stream;
            } else {
                stream->fail(added);
                --num_streams_;
            }
        }
        inbox_.clear();
        inbox_tokens_ = 0;
        stats_.engine = engine_->stats();
        aborts.swap(aborts_);
        if (abort_all_) {
            for (const auto& [id, stream] : streams_) shutdown_aborts.push_back(id);
        }
    }
    abort_streams(aborts, Status::ok());
    abort_streams(shutdown_aborts,
                  Status(StatusCode::kUnavailable, "the server shut down before the request finished (drain timeout)"));
}

// Aborts the engine requests `ids` and closes their streams: with an abort output when `failure` is ok, else failed.
void AsyncEngine::abort_streams(const std::vector<RequestId>& ids, const Status& failure) {
    int num_closed = 0;
    for (RequestId id : ids) {
        auto found = streams_.find(id);
        if (found == streams_.end() || !engine_->abort(id).is_ok()) continue;
        if (failure.is_ok()) {
            found->second->push(RequestOutput{.id = id, .finish_reason = engine::FinishReason::kAbort});
        } else {
            found->second->fail(failure);
        }
        streams_.erase(found);
        ++num_closed;
    }
    if (num_closed > 0) {
        std::lock_guard lock(mutex_);
        num_streams_ -= num_closed;
    }
}

void AsyncEngine::dispatch(std::vector<RequestOutput>& outputs) {
    int num_closed = 0;
    for (RequestOutput& output : outputs) {
        if (output.finish_reason && on_finish_) on_finish_(output);
        auto found = streams_.find(output.id);
        if (found == streams_.end()) continue;  // aborted earlier; its stream is closed
        const bool finished = output.finish_reason.has_value();
        found->second->push(std::move(output));
        if (finished) {
            streams_.erase(found);
            ++num_closed;
        }
    }
    if (num_closed > 0) {
        std::lock_guard lock(mutex_);
        num_streams_ -= num_closed;
    }
}

// The engine thread's top level: nothing may escape it (std::terminate would end the process without a word).
void AsyncEngine::run() {
    trace::name_this_thread("engine");
    try {
        run_steps();
    } catch (const std::exception& error) {
        fail_thread(fmt::format("the engine thread failed: {}", error.what()));
    } catch (...) {
        fail_thread("the engine thread failed with an unknown exception");
    }
}

void AsyncEngine::run_steps() {
    for (;;) {
        const bool has_work = engine_->has_unfinished_requests();
        {
            std::unique_lock lock(mutex_);
            stats_.engine = engine_->stats();
            if (num_streams_ == 0) idle_.notify_all();
            wake_.wait(lock, [&] { return stop_ || !inbox_.empty() || !aborts_.empty() || has_work; });
            if (stop_) break;
        }
        take_inbox();
        // Also after an abort that left the engine empty, so its final output is observed.
        auto outputs = engine_->step();
        if (!outputs.is_ok()) {
            fail_all(Status(StatusCode::kInternal, "engine step failed: " + outputs.status().message()));
            continue;
        }
        const engine::EngineStats stats = engine_->stats();
        {
            // Before the outputs go out: a client that has seen its request finish and then reads the gauges
            // (running, waiting, KV usage) must not find the request still counted.
            std::lock_guard lock(mutex_);
            stats_.engine = stats;
        }
        dispatch(outputs.value());
        if (on_step_) on_step_(stats);
    }
    fail_all(Status(StatusCode::kUnavailable, "the server stopped"));
}

// Ends every request the engine holds with `status` (shutdown, or a failed step, which is a bug: the step's requests
// are gone, but the scheduler and KV state were only planned on, so the engine goes on serving).
void AsyncEngine::fail_all(const Status& status) {
    if (status.code() == StatusCode::kInternal) log_error("{}", status.message());
    for (auto& [id, stream] : streams_) {
        (void)engine_->abort(id);
        stream->fail(status);
    }
    std::lock_guard lock(mutex_);
    num_streams_ -= static_cast<int>(streams_.size());
    streams_.clear();
}

// After an exception on the engine thread: the engine's state may be half-updated, so it is not touched again. Every
// stream, accepted or still in the inbox, fails with kInternal; nothing more is accepted; the observer hears why.
void AsyncEngine::fail_thread(const std::string& reason) {
    log_error("{}; failing every request in flight", reason);
    const Status failure(StatusCode::kInternal, reason);
    {
        std::lock_guard lock(mutex_);
        failed_.store(true);
        accepting_.store(false);
        for (auto& [request, stream] : inbox_) stream->fail(failure);
        inbox_.clear();
        inbox_tokens_ = 0;
        for (auto& [id, stream] : streams_) stream->fail(failure);
        streams_.clear();
        num_streams_ = 0;
    }
    idle_.notify_all();
    if (on_failure_) {
        try {
            on_failure_(reason);
        } catch (...) {
            log_error("the engine failure observer threw");
        }
    }
}

}  // namespace tern::serving
