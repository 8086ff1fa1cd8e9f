#include "net/http_client.h"

#include <fmt/format.h>
#include <httplib.h>

namespace tern::net {
namespace {

constexpr size_t kMaxErrorBody = 4096;

template <typename Duration>
std::pair<time_t, time_t> seconds_and_micros(Duration duration) {
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(duration).count();
    return {static_cast<time_t>(micros / 1'000'000), static_cast<time_t>(micros % 1'000'000)};
}

bool is_success(int status) { return status >= 200 && status < 300; }

}  // namespace

std::string_view to_string(HttpErrorKind kind) {
    switch (kind) {
        case HttpErrorKind::kNone: return "none";
        case HttpErrorKind::kConnect: return "connect";
        case HttpErrorKind::kTimeout: return "timeout";
        case HttpErrorKind::kRead: return "read";
        case HttpErrorKind::kWrite: return "write";
        case HttpErrorKind::kStatus: return "http_status";
        case HttpErrorKind::kCanceled: return "canceled";
        case HttpErrorKind::kOther: return "other";
    }
    return "other";
}

struct HttpClient::Impl {
    Impl(BaseUrl base_url, HttpClientOptions client_options)
        : base(std::move(base_url)), options(std::move(client_options)), client(base.host, base.port) {
        const auto [connect_s, connect_us] = seconds_and_micros(options.connect_timeout);
        const auto [read_s, read_us] = seconds_and_micros(options.read_timeout);
        const auto [write_s, write_us] = seconds_and_micros(options.write_timeout);
        client.set_connection_timeout(connect_s, connect_us);
        client.set_read_timeout(read_s, read_us);
        client.set_write_timeout(write_s, write_us);
        client.set_keep_alive(options.keep_alive);
        // Without TCP_NODELAY a small request can wait for a delayed ACK (40 ms on Linux) and skew TTFT.
        client.set_tcp_nodelay(true);
        // No Accept-Encoding: a compressing server would batch the stream and the measured latencies with it.
        client.set_decompress(false);
        for (const auto& [name, value] : options.headers) default_headers.emplace(name, value);
        client.set_default_headers(default_headers);
    }

    std::string where() const { return base.origin(); }

    // Maps cpp-httplib's error to ours; `idle` is the time since the last byte, which tells a read timeout from a
    // connection the server closed.
    void classify(httplib::Error error, Clock::duration idle, bool over_deadline, StreamOutcome* outcome) const {
        using httplib::Error;
        switch (error) {
            case Error::Connection:
            case Error::BindIPAddress:
                outcome->error_kind = HttpErrorKind::kConnect;
                outcome->error_message = fmt::format("cannot connect to {}", where());
                return;
            case Error::ConnectionTimeout:
                outcome->error_kind = HttpErrorKind::kTimeout;
                outcome->error_message = fmt::format("connecting to {} timed out", where());
                return;
            case Error::Read:
                if (idle + std::chrono::milliseconds(50) >= options.read_timeout) {
                    outcome->error_kind = HttpErrorKind::kTimeout;
                    outcome->error_message = fmt::format("no data from {} for {} ms (read timeout)", where(),
                                                         options.read_timeout.count());
                } else {
                    outcome->error_kind = HttpErrorKind::kRead;
                    outcome->error_message = fmt::format("{} closed the connection mid-response", where());
                }
                return;
            case Error::Write:
                outcome->error_kind = HttpErrorKind::kWrite;
                outcome->error_message = fmt::format("sending the request to {} failed", where());
                return;
            case Error::Canceled:
                outcome->error_kind = over_deadline ? HttpErrorKind::kTimeout : HttpErrorKind::kCanceled;
                outcome->error_message =
                    over_deadline ? fmt::format("the request took longer than {} ms (total timeout)",
                                                options.total_timeout.count())
                                  : "the request was canceled";
                return;
            default:
                outcome->error_kind = HttpErrorKind::kOther;
                outcome->error_message = fmt::format("request to {} failed: {}", where(), httplib::to_string(error));
                return;
        }
    }

    BaseUrl base;
    HttpClientOptions options;
    httplib::Headers default_headers;
    httplib::Client client;
    int64_t requests_sent = 0;  // before this one: a later request may go on a kept-alive connection
};

HttpClient::HttpClient(BaseUrl base, HttpClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(base), std::move(options))) {}

HttpClient::~HttpClient() = default;

const BaseUrl& HttpClient::base_url() const { return impl_->base; }

StreamOutcome HttpClient::post_stream(std::string_view path, const std::string& body, const BodyChunkFn& on_chunk) {
    StreamOutcome outcome;
    httplib::Request request;
    request.method = "POST";
    request.path = impl_->base.join(path);
    request.headers.emplace("Content-Type", "application/json");
    request.headers.emplace("Accept", "text/event-stream");
    request.body = body;
    Clock::time_point last_activity;
    const Clock::time_point deadline = Clock::now() + impl_->options.total_timeout;
    bool over_deadline = false;
    request.response_handler = [&](const httplib::Response& response) {
        outcome.status = response.status;
        outcome.headers_received = Clock::now();
        last_activity = outcome.headers_received;
        return true;
    };
    request.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
        const Clock::time_point now = Clock::now();
        last_activity = now;
        if (now > deadline) {
            over_deadline = true;
            return false;
        }
        if (!is_success(outcome.status)) {
            outcome.error_body.append(data, std::min(length, kMaxErrorBody - std::min(kMaxErrorBody,
                                                                                      outcome.error_body.size())));
            return true;
        }
        return on_chunk(std::string_view(data, length), now);
    };
    httplib::Response response;
    httplib::Error error = httplib::Error::Success;
    bool sent = false;
    // A kept-alive connection that the server closed after the last response fails the next request before any
    // byte of an answer: llama-server under tern bench serve lost 1 request in 6 that way at concurrency 1
    // ("closed the connection mid-response", and its log shows it never began the request). Such a request is sent
    // once more on a fresh connection, as browsers and urllib3 do, and counted.
    for (int attempt = 0; attempt < 2; ++attempt) {
        outcome.sent = Clock::now();
        last_activity = outcome.sent;
        error = httplib::Error::Success;
        sent = impl_->client.send(request, response, error);
        const bool stale = !sent && impl_->requests_sent > 0 && outcome.status == 0 && impl_->options.keep_alive &&
                           (error == httplib::Error::Read || error == httplib::Error::Write);
        ++impl_->requests_sent;
        if (!stale || attempt == 1) break;
        impl_->client.stop();
        ++outcome.stale_connection_retries;
    }
    outcome.finished = Clock::now();
    if (!sent || error != httplib::Error::Success) {
        impl_->classify(error, outcome.finished - last_activity, over_deadline, &outcome);
        return outcome;
    }
    outcome.status = response.status;
    if (!is_success(outcome.status)) {
        outcome.error_kind = HttpErrorKind::kStatus;
        outcome.error_message = fmt::format("HTTP {} from {}", outcome.status, request.path);
    }
    return outcome;
}

Result<HttpResponse> HttpClient::get(std::string_view path) {
    const std::string full_path = impl_->base.join(path);
    httplib::Result result = impl_->client.Get(full_path);
    if (!result) {
        return Status(StatusCode::kUnavailable, fmt::format("GET {}{} failed: {}", impl_->base.origin(), full_path,
                                                            httplib::to_string(result.error())));
    }
    return HttpResponse{result->status, result->body, result->get_header_value("Content-Type")};
}

Result<HttpResponse> HttpClient::post(std::string_view path, const std::string& body) {
    const std::string full_path = impl_->base.join(path);
    httplib::Result result = impl_->client.Post(full_path, body, "application/json");
    if (!result) {
        return Status(StatusCode::kUnavailable, fmt::format("POST {}{} failed: {}", impl_->base.origin(), full_path,
                                                            httplib::to_string(result.error())));
    }
    return HttpResponse{result->status, result->body, result->get_header_value("Content-Type")};
}

}  // namespace tern::net
