// Turns one streamed response, fed as timestamped pieces of bytes, into latency measurements. As in vLLM's client,
// each SSE chunk that carries generated text counts as one token arrival (a chunk holding several tokens is one ITL
// sample); role-only and empty deltas, usage-only chunks and "[DONE]" are not tokens. Token counts come from the
// usage the server reports, else from the number of token chunks.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/openai_types.h"
#include "api/sse.h"

namespace tern::bench {

using Clock = std::chrono::steady_clock;

struct StreamMeasurement {
    bool got_token = false;
    double ttft_s = 0;             // start to the first token chunk
    std::vector<double> itl_s;     // between consecutive token chunks
    double last_token_s = 0;       // start to the last token chunk
    int64_t num_token_chunks = 0;
    int64_t num_text_bytes = 0;
    std::optional<api::Usage> usage;
    std::string finish_reason;
    bool saw_done = false;
    std::optional<api::ApiError> stream_error;  // an error object sent inside the stream
    std::string bad_chunk;                      // why a chunk could not be decoded; empty if all were fine
};

// Not thread-safe; one per request.
class StreamAccumulator {
public:
    explicit StreamAccumulator(Clock::time_point start) : start_(start) {}

    // Returns false once the stream should stop: after an error object or an undecodable chunk.
    bool feed(std::string_view bytes, Clock::time_point arrived);
    // Call at the end of the response to decode a last event that had no closing blank line.
    void finish(Clock::time_point ended);

    const StreamMeasurement& measurement() const { return measurement_; }

private:
    bool handle_event(const api::SseEvent& event, Clock::time_point arrived);

    Clock::time_point start_;
    Clock::time_point last_token_;
    api::SseParser parser_;
    std::vector<api::SseEvent> events_;
    StreamMeasurement measurement_;
};

}  // namespace tern::bench
