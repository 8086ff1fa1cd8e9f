#include "trace/trace.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/log.h"
#include "base/partial_files.h"

namespace tern::trace {
namespace {

std::mutex& names_mutex() {
    static std::mutex mutex;
    return mutex;
}

std::map<uint32_t, std::string>& thread_names() {
    static std::map<uint32_t, std::string> names;
    return names;
}

// Where an event sorts among events of the same timestamp: ends first, then complete events, then begins (longer
// intervals first, so an async interval encloses the ones nested in it), then instants.
std::tuple<int64_t, int, int64_t> sort_key(const Event& event) {
    switch (event.phase) {
        case 'e': return {event.ts_ns, 0, event.dur_ns};
        case 'X': return {event.ts_ns, 1, -event.dur_ns};
        case 'b': return {event.ts_ns, 2, -event.dur_ns};
        default: return {event.ts_ns, 3, 0};
    }
}

void append_event(std::string& out, const Event& event, int64_t origin_ns) {
    fmt::format_to(std::back_inserter(out), R"({{"name":"{}","cat":"{}","ph":"{}","ts":{:.3f},"pid":1,"tid":{})",
                   event.name, event.category, event.phase, static_cast<double>(event.ts_ns - origin_ns) / 1000.0,
                   event.tid);
    if (event.phase == 'X') fmt::format_to(std::back_inserter(out), R"(,"dur":{:.3f})", event.dur_ns / 1000.0);
    if (event.phase != 'X') fmt::format_to(std::back_inserter(out), R"(,"id":"0x{:x}")", event.id);
    if (event.phase == 'n' || event.phase == 'i') out += R"(,"s":"t")";
    out += R"(,"args":{)";
    bool first = true;
    for (const Arg& arg : event.args) {
        if (arg.key == nullptr) continue;
        fmt::format_to(std::back_inserter(out), R"({}"{}":{})", first ? "" : ",", arg.key, arg.value);
        first = false;
    }
    out += "}}";
}

void record_async(uint64_t id, const char* name, char phase, Clock::time_point at, int64_t length_ns,
                  const std::array<Arg, 3>& args) {
    Recorder* recorder = active();
    if (recorder == nullptr) return;
    record_if_active(recorder, Event{name, "request", phase, now_ns(at), length_ns, id, 0, args});
}

// Held while an event is added and while the active recorder is cleared: after clear_active() no event reaches the
// old recorder. Taken only while tracing is on.
std::mutex& active_mutex() {
    static std::mutex mutex;
    return mutex;
}

}  // namespace

#ifndef TERN_TRACE_DISABLED
bool set_active(Recorder* recorder) {
    Recorder* expected = nullptr;
    return detail::g_active.compare_exchange_strong(expected, recorder);
}

void clear_active(Recorder* recorder) {
    std::lock_guard lock(active_mutex());
    Recorder* expected = recorder;
    detail::g_active.compare_exchange_strong(expected, nullptr);
}
#endif

void record_if_active(Recorder* recorder, const Event& event) {
    std::lock_guard lock(active_mutex());
    if (active() == recorder) recorder->add(event);
}

uint32_t thread_id() {
    static std::atomic<uint32_t> next{1};
    thread_local const uint32_t id = next.fetch_add(1);
    return id;
}

void name_this_thread(const std::string& name) {
    const uint32_t id = thread_id();
    std::lock_guard lock(names_mutex());
    thread_names()[id] = name;
}

void Recorder::add(const Event& event) {
    std::lock_guard lock(mutex_);
    if (events_.size() >= max_events_) {
        ++dropped_;
        return;
    }
    events_.push_back(event);
}

size_t Recorder::num_events() const {
    std::lock_guard lock(mutex_);
    return events_.size();
}

size_t Recorder::num_dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_;
}

std::string Recorder::to_json() const {
    std::vector<Event> events;
    size_t dropped = 0;
    {
        std::lock_guard lock(mutex_);
        events = events_;
        dropped = dropped_;
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& a, const Event& b) { return sort_key(a) < sort_key(b); });
    const int64_t origin = events.empty() ? 0 : events.front().ts_ns;
    std::string out = R"({"displayTimeUnit":"ms","traceEvents":[)";
    out.reserve(events.size() * 120);
    {
        std::lock_guard lock(names_mutex());
        out += R"({"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"tern"}})";
        for (const auto& [tid, name] : thread_names()) {
            out += fmt::format(R"(,{{"name":"thread_name","ph":"M","pid":1,"tid":{},"args":{{"name":{}}}}})", tid,
                               nlohmann::json(name).dump());
        }
    }
    for (const Event& event : events) {
        out += ',';
        append_event(out, event, origin);
    }
    out += fmt::format(R"(],"otherData":{{"events":{},"dropped_events":{}}}}})", events.size(), dropped);
    return out + "\n";
}

Status Recorder::write(const std::string& path) const {
    const std::string temp = path + ".partial";
    PartialFile partial(temp);
    std::FILE* file = std::fopen(temp.c_str(), "wb");
    if (file == nullptr) return invalid_argument(fmt::format("cannot write the trace to {}: {}", path, std::strerror(errno)));
    const std::string json = to_json();
    const bool written = std::fwrite(json.data(), 1, json.size(), file) == json.size();
    const bool closed = std::fclose(file) == 0;
    if (!written || !closed || std::rename(temp.c_str(), path.c_str()) != 0) {
        std::remove(temp.c_str());
        return internal_error(fmt::format("cannot write the trace to {}: {}", path, std::strerror(errno)));
    }
    return Status::ok();
}

Status FileTrace::start() {
    if (path_.empty()) return Status::ok();
#ifdef TERN_TRACE_DISABLED
    return invalid_argument("this tern was built with -DTERN_TRACE=OFF: --trace records nothing");
#else
    if (!set_active(&recorder_)) return invalid_argument("another trace is being recorded");
    return Status::ok();
#endif
}

Status FileTrace::finish() {
    if (path_.empty()) return Status::ok();
    clear_active(&recorder_);
    TERN_RETURN_IF_ERROR(recorder_.write(path_));
    log_info("trace: {} events written to {}{} (open it in https://ui.perfetto.dev or chrome://tracing)",
             recorder_.num_events(), path_,
             recorder_.num_dropped() > 0 ? fmt::format(", {} dropped past the limit", recorder_.num_dropped()) : "");
    return Status::ok();
}

void request_interval(uint64_t id, const char* name, Clock::time_point begin, Clock::time_point end,
                      std::array<Arg, 3> args) {
    if (active() == nullptr || begin == Clock::time_point{} || end == Clock::time_point{} || end < begin) return;
    const int64_t length = now_ns(end) - now_ns(begin);
    record_async(id, name, 'b', begin, length, args);
    record_async(id, name, 'e', end, length, {});
}

void request_instant(uint64_t id, const char* name, Clock::time_point at, std::array<Arg, 3> args) {
    record_async(id, name, 'n', at, 0, args);
}

}  // namespace tern::trace
