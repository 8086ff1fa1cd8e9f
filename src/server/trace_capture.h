// GET /debug/trace?seconds=N (admin key only): records a step trace for N seconds of live traffic and answers it as
// Chrome trace JSON. One capture at a time (a 409 while --trace or another capture records); a client that leaves
// ends the capture at once.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "http/exchange.h"
#include "trace/trace.h"

namespace tern::server {

class TraceCapture final : public http::PendingAnswer {
public:
    // The answer to send instead when the request is refused (bad `seconds`, another recording active).
    static std::variant<std::unique_ptr<TraceCapture>, http::Answer> start(const http::Request& request);
    ~TraceCapture() override;

    http::Delivery delivery() const override { return http::Delivery::kWhole; }
    void set_listener(const std::function<void()>& listener) override;
    bool poll(std::vector<std::string>& events) override;
    void client_gone() override;
    http::Answer whole_answer() const override;

private:
    explicit TraceCapture(double seconds);
    void run(double seconds);

    trace::Recorder recorder_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::function<void()> listener_;
    bool stopping_ = false;
    bool finished_ = false;
    std::thread thread_;  // last: started once the rest is built
};

}  // namespace tern::server
