#include "engine/request_timings.h"

namespace tern::engine {
namespace {

double seconds_between(Clock::time_point begin, Clock::time_point end) {
    return std::chrono::duration<double>(end - begin).count();
}

}  // namespace

double RequestTimings::queue_seconds() const { return scheduled() ? seconds_between(arrival, first_scheduled) : 0.0; }

double RequestTimings::ttft_seconds() const {
    return token_times.empty() ? -1.0 : seconds_between(arrival, token_times.front());
}

double RequestTimings::tpot_seconds() const {
    if (token_times.size() < 2) return 0.0;
    return seconds_between(token_times.front(), token_times.back()) / static_cast<double>(token_times.size() - 1);
}

double RequestTimings::e2e_seconds() const { return seconds_between(arrival, finish); }

std::vector<double> RequestTimings::inter_token_seconds() const {
    std::vector<double> gaps;
    for (size_t idx = 1; idx < token_times.size(); ++idx) {
        gaps.push_back(seconds_between(token_times[idx - 1], token_times[idx]));
    }
    return gaps;
}

}  // namespace tern::engine
