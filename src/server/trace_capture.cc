#include "server/trace_capture.h"

#include <charconv>
#include <chrono>

#include <fmt/format.h>

namespace tern::server {

constexpr double kMaxSeconds = 60;

std::variant<std::unique_ptr<TraceCapture>, http::Answer> TraceCapture::start(const http::Request& request) {
    const std::string text = request.query_value("seconds").value_or("5");
    double seconds = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (error != std::errc() || end != text.data() + text.size() || !(seconds > 0 && seconds <= kMaxSeconds)) {
        return http::error_answer(400, fmt::format("seconds must be a number in (0, {}], not '{}'", kMaxSeconds, text),
                                  "seconds");
    }
    std::unique_ptr<TraceCapture> capture(new TraceCapture(seconds));
    if (!capture->thread_.joinable()) {
        return http::error_answer(409, "a trace is already being recorded (tern serve --trace, or another "
                                       "/debug/trace): try again when it ends");
    }
    return capture;
}

TraceCapture::TraceCapture(double seconds) {
    if (!trace::set_active(&recorder_)) return;
    thread_ = std::thread([this, seconds] { run(seconds); });
}

TraceCapture::~TraceCapture() {
    {
        std::lock_guard lock(mutex_);
        listener_ = nullptr;  // first, as PendingAnswer asks
        stopping_ = true;
        wake_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
    trace::clear_active(&recorder_);
}

// Waits out the capture (or a client that left), stops recording, and tells the session the answer is ready.
void TraceCapture::run(double seconds) {
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stopping_; });
    lock.unlock();
    trace::clear_active(&recorder_);
    lock.lock();
    finished_ = true;
    const std::function<void()> listener = listener_;
    lock.unlock();
    if (listener) listener();
}

void TraceCapture::set_listener(const std::function<void()>& listener) {
    std::lock_guard lock(mutex_);
    listener_ = listener;
}

bool TraceCapture::poll(std::vector<std::string>&) {
    std::lock_guard lock(mutex_);
    return finished_;
}

void TraceCapture::client_gone() {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
}

http::Answer TraceCapture::whole_answer() const { return http::json_answer(200, recorder_.to_json()); }

}  // namespace tern::server
