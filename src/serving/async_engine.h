// The engine on its own thread, for a server: HTTP threads submit requests and read each request's outputs from a
// stream; the engine thread adds, aborts and steps. Admission limits are checked at submit() against a snapshot of
// the queue, so an overloaded server refuses at once instead of after the current step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"

namespace tern::serving {

using engine::EngineRequest;
using engine::RequestOutput;
using engine::RequestId;

// One request's outputs, written by the engine thread and read by the thread that serves the request.
class RequestStream {
public:
    explicit RequestStream(RequestId id) : id_(id) {}
    RequestId id() const { return id_; }

    // Waits up to `timeout` for the next output. Returns it, or nullopt on timeout or once the stream is closed
    // (finished or failed) and drained.
    std::optional<RequestOutput> next(std::chrono::milliseconds timeout);
    bool closed() const;
    Status error() const;  // why the engine refused the request after submit(); ok otherwise

    // Called (on the engine thread) after each push() or fail(), for readers that do not block on next(): it must
    // only hand work to another thread. Clearing it (nullptr) waits for a call in progress, so that once cleared the
    // listener's captures may go away.
    void set_listener(std::function<void()> listener);

    // Engine side.
    void push(RequestOutput output);
    void fail(Status status);

private:
    void notify();

    RequestId id_;
    std::mutex listener_mutex_;
    std::function<void()> listener_;
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<RequestOutput> outputs_;
    bool closed_ = false;
    Status error_;
};

struct AsyncEngineStats {
    engine::EngineStats engine;
    int num_inbox = 0;  // submitted, not yet seen by the engine thread
};

class AsyncEngine {
public:
    // Called on the engine thread: every finished request's last output (with its timings), the engine's counters
    // after every step, and (at most once) why the engine thread died.
    using FinishObserver = std::function<void(const RequestOutput&)>;
    using StepObserver = std::function<void(const engine::EngineStats&)>;
    using FailureObserver = std::function<void(const std::string& reason)>;

    // Starts the engine thread.
    AsyncEngine(std::unique_ptr<engine::Engine> engine, FinishObserver on_finish = nullptr,
                StepObserver on_step = nullptr, FailureObserver on_failure = nullptr);
    ~AsyncEngine();  // stops the thread; unfinished requests are aborted

    // Queues a request; kResourceExhausted when the waiting queue is full, kUnavailable when draining or failed.
    // Other errors (bad input found by the engine) arrive through the stream's error().
    Result<std::shared_ptr<RequestStream>> submit(EngineRequest request);
    void abort(RequestId id);  // any thread; unknown ids are ignored

    // Stops accepting requests; returns once every accepted request finished or `timeout` passed (then the rest
    // fail with kUnavailable). Returns whether everything finished in time.
    bool drain(std::chrono::milliseconds timeout);
    bool accepting() const { return accepting_.load(); }
    // The engine thread died (an exception escaped a step or an observer): every request in flight failed with
    // kInternal and nothing more is accepted. The engine's state is not trusted after that, so there is no
    // recovery in-process: the server exits and its supervisor restarts it. (A step that returns an error is
    // different: its requests fail with kInternal and the engine goes on.)
    bool failed() const { return failed_.load(); }
    bool queue_full() const;

    AsyncEngineStats stats() const;
    const engine::EngineCapacity& capacity() const { return capacity_; }
    const engine::EngineConfig& config() const { return config_; }
    RequestId next_id() { return next_id_.fetch_add(1); }

private:
    void run();
    void run_steps();
    void take_inbox();
    void abort_streams(const std::vector<RequestId>& ids, const Status& failure);
    void dispatch(std::vector<RequestOutput>& outputs);
    void fail_all(const Status& status);
    void fail_thread(const std::string& reason);

    std::unique_ptr<engine::Engine> engine_;  // touched only by the engine thread after construction
    engine::EngineCapacity capacity_;
    engine::EngineConfig config_;
    FinishObserver on_finish_;
    StepObserver on_step_;
    FailureObserver on_failure_;
    std::atomic<bool> accepting_{true};
    std::atomic<bool> failed_{false};
    std::atomic<RequestId> next_id_{1};

    mutable std::mutex mutex_;  // guards everything below
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::vector<std::pair<EngineRequest, std::shared_ptr<RequestStream>>> inbox_;
    std::vector<RequestId> aborts_;
    AsyncEngineStats stats_;     // published by the engine thread after each round
    int64_t inbox_tokens_ = 0;   // prompt tokens in inbox_
    int num_streams_ = 0;        // requests accepted and not finished (mirrors streams_.size())
    bool stop_ = false;
    bool abort_all_ = false;     // drain() ran out of time

    std::unordered_map<RequestId, std::shared_ptr<RequestStream>> streams_;  // engine thread only
    std::thread thread_;
};

}  // namespace tern::serving
