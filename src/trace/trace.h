// Step traces in Chrome's trace event format (the JSON that Perfetto and chrome://tracing open): complete events for
// the parts of an engine step and of a forward pass, async events for each request's queued / prefill / decode
// life, recorded while a Recorder is active. With none active (the default) a span costs one relaxed atomic load and
// a branch; built with -DTERN_TRACE=OFF it costs nothing (docs/perf/tracing.md measures both).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"

namespace tern::trace {

using Clock = std::chrono::steady_clock;

struct Arg {
    const char* key = nullptr;  // a string literal: events keep the pointer
    int64_t value = 0;
};

struct Event {
    const char* name = "";      // string literals, as for Arg::key
    const char* category = "";
    char phase = 'X';           // 'X' complete, 'b' / 'e' async begin / end, 'i' instant
    int64_t ts_ns = 0;          // since the clock's epoch
    int64_t dur_ns = 0;         // 'X' only
    uint64_t id = 0;            // async events: the request id
    uint32_t tid = 0;
    std::array<Arg, 3> args{};
};

class Recorder {
public:
    // Past `max_events` (about 80 bytes each) events are dropped and counted, so a forgotten trace cannot take the
    // machine's memory.
    explicit Recorder(size_t max_events = 4'000'000) : max_events_(max_events) { events_.reserve(1 << 16); }

    void add(const Event& event);
    size_t num_events() const;
    size_t num_dropped() const;
    // {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}, events in time order, thread names as
    // metadata events, timestamps in microseconds from the first event.
    std::string to_json() const;
    // Written under a temporary name and renamed.
    Status write(const std::string& path) const;

private:
    size_t max_events_;
    mutable std::mutex mutex_;
    std::vector<Event> events_;
    size_t dropped_ = 0;
};

#ifdef TERN_TRACE_DISABLED
inline Recorder* active() { return nullptr; }
inline bool set_active(Recorder*) { return false; }
inline void clear_active(Recorder*) {}
#else
namespace detail {
inline std::atomic<Recorder*> g_active{nullptr};
}
// The recorder that spans write to, or nullptr (tracing off).
inline Recorder* active() { return detail::g_active.load(std::memory_order_relaxed); }
// Makes `recorder` the active one unless another is; false when another is.
bool set_active(Recorder* recorder);
// Stops recording into `recorder` if it is the active one. Once it returns nothing writes to `recorder` any more (a
// span still open drops its event), so the caller may destroy it.
void clear_active(Recorder* recorder);
#endif

// Adds `event` to `recorder` if that is still the active recorder (under the lock clear_active takes).
void record_if_active(Recorder* recorder, const Event& event);

inline int64_t now_ns(Clock::time_point time = Clock::now()) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

// This thread's small stable id in traces; `name_this_thread` labels it ("engine", "http-worker").
uint32_t thread_id();
void name_this_thread(const std::string& name);

// Times its own scope as one complete event when tracing is on.
class Span {
public:
    Span(const char* name, const char* category) : recorder_(active()) {
        if (recorder_ != nullptr) {
            event_.name = name;
            event_.category = category;
            event_.ts_ns = now_ns();
        }
    }
    ~Span() {
        if (recorder_ == nullptr) return;
        event_.dur_ns = now_ns() - event_.ts_ns;
        event_.tid = thread_id();
        record_if_active(recorder_, event_);
    }
    Span(const Span&) = delete;
    Span& operator=(const Span&) = delete;

    // Up to three; later ones are ignored.
    Span& arg(const char* key, int64_t value) {
        if (recorder_ != nullptr && num_args_ < event_.args.size()) event_.args[num_args_++] = Arg{key, value};
        return *this;
    }

private:
    Recorder* recorder_;
    Event event_;
    size_t num_args_ = 0;
};

// `--trace FILE`: records from start() until finish(), which writes FILE (and logs how many events it holds).
class FileTrace {
public:
    explicit FileTrace(std::string path) : path_(std::move(path)) {}
    ~FileTrace() { clear_active(&recorder_); }
    FileTrace(const FileTrace&) = delete;
    FileTrace& operator=(const FileTrace&) = delete;

    // Nothing when the path is empty; an error when another recording is active.
    Status start();
    // Call once every traced thread is done with its step (the engine stopped or joined).
    Status finish();

private:
    std::string path_;
    Recorder recorder_;
};

// An async interval on request `id`'s track ("b" and "e" events), when tracing is on and both ends are set.
void request_interval(uint64_t id, const char* name, Clock::time_point begin, Clock::time_point end,
                      std::array<Arg, 3> args = {});
// An instant on request `id`'s track.
void request_instant(uint64_t id, const char* name, Clock::time_point at, std::array<Arg, 3> args = {});

}  // namespace tern::trace
