#include "bench/progress.h"

#include <fmt/format.h>
#include <unistd.h>

namespace tern::bench {

ProgressBar::ProgressBar(int64_t total, std::string label, bool enabled, std::FILE* out)
    : total_(std::max<int64_t>(1, total)),
      label_(std::move(label)),
      enabled_(enabled),
      is_terminal_(::isatty(::fileno(out)) != 0),
      out_(out),
      start_(std::chrono::steady_clock::now()) {
    if (enabled_) ticker_ = std::thread([this] { tick(); });
}

ProgressBar::~ProgressBar() {
    if (!enabled_) return;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    stop_cv_.notify_all();
    ticker_.join();
    std::fprintf(out_, "%s%s\n", is_terminal_ ? "\r" : "", line().c_str());
    std::fflush(out_);
}

void ProgressBar::on_sent(int64_t) { sent_.fetch_add(1, std::memory_order_relaxed); }

void ProgressBar::on_done(const RequestRecord& record) {
    done_.fetch_add(1, std::memory_order_relaxed);
    if (!record.success) failed_.fetch_add(1, std::memory_order_relaxed);
    output_tokens_.fetch_add(record.output_tokens, std::memory_order_relaxed);
}

std::string ProgressBar::line() const {
    constexpr int kWidth = 24;
    const int64_t done = done_.load(std::memory_order_relaxed);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const int filled = static_cast<int>(std::min<int64_t>(kWidth, done * kWidth / total_));
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    const double token_rate = elapsed > 0 ? static_cast<double>(output_tokens_.load()) / elapsed : 0;
    return fmt::format("{}[{}{}] {}/{} req | {:.2f} req/s | {:.0f} tok/s | in flight {} | failed {} | {:.1f} s",
                       label_.empty() ? "" : label_ + " ", std::string(static_cast<size_t>(filled), '#'),
                       std::string(static_cast<size_t>(kWidth - filled), '-'), done, total_, rate, token_rate,
                       sent_.load() - done, failed_.load(), elapsed);
}

void ProgressBar::tick() {
    const auto period = is_terminal_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(10'000);
    std::unique_lock lock(mutex_);
    while (!stop_cv_.wait_for(lock, period, [this] { return stopping_; })) {
        if (is_terminal_) {
            std::fprintf(out_, "\r%s\x1b[K", line().c_str());
        } else {
            std::fprintf(out_, "%s\n", line().c_str());
        }
        std::fflush(out_);
    }
}

}  // namespace tern::bench
