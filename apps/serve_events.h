// What ends `tern serve`: SIGTERM / SIGINT, or the engine thread dying. The signals are taken by a thread of their
// own from the start, so that they are honoured while the model loads and warms up (when the main thread is busy
// and nothing is served yet, they end the process at once); once serving, they wake wait().
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace tern::apps {

class ServeEvents {
public:
    enum class Kind { kSignal, kEngineFailure };
    struct Event {
        Kind kind;
        int signal = 0;      // kSignal: SIGTERM or SIGINT
        std::string reason;  // kEngineFailure
    };

    // Blocks SIGTERM and SIGINT in the calling thread (so in every thread started after) and starts the watcher.
    // Construct before any other thread.
    ServeEvents();
    ~ServeEvents();
    ServeEvents(const ServeEvents&) = delete;
    ServeEvents& operator=(const ServeEvents&) = delete;

    // From now on a signal is delivered to wait() instead of ending the process.
    void begin_serving();
    // Blocks until a signal arrives (after begin_serving()) or engine_failed() is called.
    Event wait();
    // Any thread: the engine died with `reason`.
    void engine_failed(const std::string& reason);

private:
    void watch_signals();

    std::mutex mutex_;
    std::condition_variable changed_;
    bool serving_ = false;
    bool stop_ = false;
    bool has_event_ = false;
    Event event_{Kind::kSignal};
    std::thread watcher_;
};

}  // namespace tern::apps
