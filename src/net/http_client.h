// A blocking HTTP/1.1 client over cpp-httplib for calling OpenAI-compatible servers: plain requests, and streamed
// POSTs whose body is handed over piece by piece with the time each piece was read, so latencies can be measured
// per server-sent event. It does not parse SSE or JSON (see api/). Failures come back as values, never exceptions.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "net/url.h"

namespace tern::net {

using Clock = std::chrono::steady_clock;

struct HttpClientOptions {
    std::chrono::milliseconds connect_timeout{10'000};  // to open the TCP connection
    std::chrono::milliseconds read_timeout{300'000};    // the longest wait for the next byte (covers a long prefill)
    std::chrono::milliseconds write_timeout{60'000};    // the longest wait to send request bytes
    std::chrono::milliseconds total_timeout{3'600'000}; // a whole streamed request, headers to last byte
    bool keep_alive = true;                              // reuse one connection across this client's requests
    std::vector<std::pair<std::string, std::string>> headers;  // sent with every request (e.g. Authorization)
};

enum class HttpErrorKind {
    kNone,
    kConnect,   // could not connect (refused, unreachable, DNS)
    kTimeout,   // connect, read or total timeout
    kRead,      // the connection broke while reading the response
    kWrite,     // the connection broke while sending the request
    kStatus,    // the server answered with a non-2xx status
    kCanceled,  // the body callback asked to stop
    kOther,
};

// "connect", "timeout", "read", "write", "http_status", "canceled", "other" ("none" for kNone).
std::string_view to_string(HttpErrorKind kind);

// Called with each piece of a 2xx response body as it is read, and the time it was read. Returning false stops the
// request (kCanceled).
using BodyChunkFn = std::function<bool(std::string_view bytes, Clock::time_point arrived)>;

struct StreamOutcome {
    int status = 0;                      // the HTTP status; 0 when no response arrived
    HttpErrorKind error_kind = HttpErrorKind::kNone;
    std::string error_message;           // one line, says what failed and where
    std::string error_body;              // the start (up to 4 KiB) of a non-2xx response body
    Clock::time_point sent;              // just before the request was handed to the socket
    Clock::time_point headers_received;  // when the status line and headers had been read
    Clock::time_point finished;          // when the response was complete or the request failed
    int stale_connection_retries = 0;    // sent again on a fresh connection: the kept one had been closed

    bool ok() const { return error_kind == HttpErrorKind::kNone; }
};

struct HttpResponse {
    int status = 0;
    std::string body;
    std::string content_type;
};

// One connection's worth of client. Not thread-safe: use one HttpClient per thread.
class HttpClient {
public:
    HttpClient(BaseUrl base, HttpClientOptions options);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // POSTs the JSON `body` to base_url.join(path) and streams the response body to `on_chunk`.
    StreamOutcome post_stream(std::string_view path, const std::string& body, const BodyChunkFn& on_chunk);

    // A GET or a JSON POST whose whole body is returned. A non-2xx status is a value, not an error; errors are
    // kUnavailable (cannot connect, timeout, broken connection) with the reason.
    Result<HttpResponse> get(std::string_view path);
    Result<HttpResponse> post(std::string_view path, const std::string& body);

    const BaseUrl& base_url() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tern::net
