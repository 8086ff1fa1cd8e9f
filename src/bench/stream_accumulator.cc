#include "bench/stream_accumulator.h"

#include "api/stream_chunk.h"

namespace tern::bench {
namespace {

double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

}  // namespace

bool StreamAccumulator::feed(std::string_view bytes, Clock::time_point arrived) {
    events_.clear();
    parser_.feed(bytes, &events_);
    for (const api::SseEvent& event : events_) {
        if (!handle_event(event, arrived)) return false;
    }
    return true;
}

void StreamAccumulator::finish(Clock::time_point ended) {
    events_.clear();
    parser_.finish(&events_);
    for (const api::SseEvent& event : events_) {
        if (!handle_event(event, ended)) return;
    }
}

bool StreamAccumulator::handle_event(const api::SseEvent& event, Clock::time_point arrived) {
    if (event.data.empty()) return true;
    if (api::is_done_marker(event.data)) {
        measurement_.saw_done = true;
        return true;
    }
    Result<api::StreamChunk> parsed = api::parse_stream_chunk(event.data);
    if (!parsed.is_ok()) {
        measurement_.bad_chunk = parsed.status().message();
        return false;
    }
    const api::StreamChunk& chunk = parsed.value();
    if (chunk.error) {
        measurement_.stream_error = chunk.error;
        return false;
    }
    if (chunk.usage) measurement_.usage = chunk.usage;
    for (const api::StreamChoice& choice : chunk.choices) {
        if (choice.finish_reason) measurement_.finish_reason = *choice.finish_reason;
        measurement_.num_text_bytes += static_cast<int64_t>(choice.text.size());
    }
    if (!chunk.has_text()) return true;
    if (!measurement_.got_token) {
        measurement_.got_token = true;
        measurement_.ttft_s = seconds_between(start_, arrived);
    } else {
        measurement_.itl_s.push_back(seconds_between(last_token_, arrived));
    }
    last_token_ = arrived;
    measurement_.last_token_s = seconds_between(start_, arrived);
    ++measurement_.num_token_chunks;
    return true;
}

}  // namespace tern::bench
