// A progress bar on stderr while a run is going: requests done / total, request and token rate, requests in flight
// and failures. On a terminal it redraws one line a few times a second; elsewhere (CI logs) it prints a line every
// 10 s. It observes the load runner from its request threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "bench/load_runner.h"

namespace tern::bench {

class ProgressBar final : public LoadObserver {
public:
    // `total`: requests expected (an upper bound with --duration). Draws nothing when `enabled` is false.
    ProgressBar(int64_t total, std::string label, bool enabled, std::FILE* out = stderr);
    // Draws the final state and ends the line.
    ~ProgressBar() override;
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    void on_sent(int64_t index) override;
    void on_done(const RequestRecord& record) override;

    // The line as drawn now, e.g. "[####----] 12/40 req | 3.1 req/s | 410 tok/s | in flight 4 | failed 0 | 3.9 s".
    std::string line() const;

private:
    void tick();

    int64_t total_;
    std::string label_;
    bool enabled_;
    bool is_terminal_;
    std::FILE* out_;
    std::chrono::steady_clock::time_point start_;
    std::atomic<int64_t> sent_{0};
    std::atomic<int64_t> done_{0};
    std::atomic<int64_t> failed_{0};
    std::atomic<int64_t> output_tokens_{0};
    std::mutex mutex_;
    std::condition_variable stop_cv_;
    bool stopping_ = false;
    std::thread ticker_;
};

}  // namespace tern::bench
