// What the bench records about one request: when it arrived and was sent, TTFT, every inter-token latency, end-to-end
// latency, token counts and how they were obtained, and the error if it failed. Times are seconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tern::bench {

enum class ErrorKind {
    kNone,
    kConnect,      // could not connect
    kTimeout,      // connect, read or total timeout
    kHttpStatus,   // a non-2xx answer (the status is in http_status)
    kRead,         // the connection broke mid-response
    kWrite,        // sending the request failed
    kStreamError,  // the server sent an error object inside the stream
    kBadStream,    // a chunk that is not valid JSON of the expected shape
    kNoTokens,     // the stream ended without a single generated token
    kCanceled,
    kOther,
};

// "connect", "timeout", "http_status", "read", "write", "stream_error", "bad_stream", "no_tokens", "canceled",
// "other" ("none" for kNone).
std::string_view to_string(ErrorKind kind);
ErrorKind error_kind_from_string(std::string_view name);

struct RequestRecord {
    int64_t index = 0;         // order of arrival in the run
    double arrival_s = 0;      // scheduled arrival, from the start of the run
    double start_s = 0;        // sent (after waiting for a --max-concurrency slot), from the start of the run
    bool success = false;
    double ttft_s = 0;         // send to first token
    std::vector<double> itl_s; // gaps between consecutive chunks that carried tokens
    double e2el_s = 0;         // send to last token (to the end of the response for failures)
    int64_t input_tokens = 0;
    bool input_tokens_from_usage = false;
    int64_t output_tokens = 0;
    bool output_tokens_from_usage = false;  // else: the number of chunks that carried tokens
    int64_t requested_output_tokens = 0;    // max_tokens sent
    std::string finish_reason;
    int http_status = 0;
    ErrorKind error_kind = ErrorKind::kNone;
    std::string error;                      // one line
    int stale_connection_retries = 0;       // sent again: the server had closed the kept connection

    double queue_s() const { return start_s - arrival_s; }
    // vLLM's TPOT: (e2el - ttft) / (output_tokens - 1); 0 when fewer than two tokens.
    double tpot_s() const;
};

}  // namespace tern::bench
