#include "apps/serve_events.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

#include "base/log.h"

namespace tern::apps {
namespace {

sigset_t stop_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    return signals;
}

const char* signal_name(int signal) { return signal == SIGTERM ? "SIGTERM" : "SIGINT"; }

}  // namespace

ServeEvents::ServeEvents() {
    const sigset_t signals = stop_signals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not the end of the process
    watcher_ = std::thread([this] { watch_signals(); });
}

ServeEvents::~ServeEvents() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    watcher_.join();
}

void ServeEvents::begin_serving() {
    std::lock_guard lock(mutex_);
    serving_ = true;
}

ServeEvents::Event ServeEvents::wait() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return has_event_; });
    return event_;
}

void ServeEvents::engine_failed(const std::string& reason) {
    {
        std::lock_guard lock(mutex_);
        if (has_event_) return;  // a signal came first: the server is stopping anyway
        event_ = Event{Kind::kEngineFailure, 0, reason};
        has_event_ = true;
    }
    changed_.notify_all();
}

// Polls with a timeout so that the destructor can stop it without sending itself a signal.
void ServeEvents::watch_signals() {
    const sigset_t signals = stop_signals();
    const timespec poll_interval{0, 100'000'000};
    for (;;) {
        const int received = sigtimedwait(&signals, nullptr, &poll_interval);
        std::unique_lock lock(mutex_);
        if (stop_) return;
        if (received < 0) continue;  // timeout or EINTR
        if (!serving_) {
            // Nothing is served yet: no request to drain, no file being written. The main thread may be deep in a
            // load that cannot be interrupted, so the process ends here.
            std::fprintf(stderr, "tern info: %s while loading the model: exiting\n", signal_name(received));
            std::fflush(stderr);
            _exit(0);
        }
        if (has_event_) {
            log_info("{} again: the server is already stopping", signal_name(received));
            continue;
        }
        event_ = Event{Kind::kSignal, received, {}};
        has_event_ = true;
        lock.unlock();
        changed_.notify_all();
    }
}

}  // namespace tern::apps
