#include "http/session.h"

#include <fmt/format.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "base/log.h"

namespace tern::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

// Lingering close (nginx's lingering_time / lingering_timeout): how long, and how much, a connection whose request
// was refused unread goes on reading and discarding before it closes.
constexpr int kLingerSeconds = 2;
constexpr size_t kLingerMaxBytes = 64 << 20;
constexpr size_t kLingerReadBytes = 64 << 10;

std::string target_path(beast::string_view target) {
    const std::string_view view(target.data(), target.size());
    return std::string(view.substr(0, view.find('?')));
}

std::string target_query(beast::string_view target) {
    const std::string_view view(target.data(), target.size());
    const size_t mark = view.find('?');
    return mark == std::string_view::npos ? std::string() : std::string(view.substr(mark + 1));
}

}  // namespace

Session::Session(asio::ip::tcp::socket socket, SessionHost& host) : stream_(std::move(socket)), host_(host) {}

Session::~Session() {
    job_.reset();  // clears the engine listener (the job always goes on the strand before this; see finish_job)
    host_.session_closed(this);
}

void Session::start() { read_header(); }

void Session::shut_down() {
    keep_alive_ = false;  // whatever is under way is the last response
    if (!job_ && !writing_ && parser_ && !parser_->got_some()) close();
}

void Session::drop_job() { job_.reset(); }

void Session::read_header() {
    if (closing_) return;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(host_.options().max_header_bytes));
    parser_->body_limit(host_.options().max_body_bytes);
    // A kept-alive connection may sit idle for idle_timeout_s; a new one must send its request within read_timeout_s.
    const int seconds = keep_alive_ ? host_.options().idle_timeout_s : host_.options().read_timeout_s;
    stream_.expires_after(std::chrono::seconds(seconds));
    bhttp::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code error, size_t) { self->on_header(error); });
}

void Session::on_header(beast::error_code error) {
    keep_alive_ = false;  // until a whole request says otherwise
    if (error == bhttp::error::end_of_stream || error == asio::error::eof || error == beast::error::timeout ||
        error == asio::error::operation_aborted) {
        return close();  // the client left between requests, or never sent one in time
    }
    if (error) return answer_read_error(error);
    const auto& header = parser_->get();
    if (beast::iequals(header[bhttp::field::expect], "100-continue")) {
        static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        asio::async_write(stream_, asio::buffer(kContinue), [self = shared_from_this()](beast::error_code error, size_t) {
            if (error) return self->close();
            self->read_body();
        });
        return;
    }
    read_body();
}

void Session::read_body() {
    stream_.expires_after(std::chrono::seconds(host_.options().read_timeout_s));
    bhttp::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code error, size_t) { self->on_request(error); });
}

// A request that cannot be read whole gets its answer, and the connection closes after it (keep_alive_ is false).
void Session::answer_read_error(beast::error_code error) {
    request_unread_ = true;
    if (error == bhttp::error::header_limit) {
        return answer(error_answer(431, fmt::format("the request headers are too large (over {} bytes)",
                                                            host_.options().max_header_bytes)));
    }
    if (error == bhttp::error::body_limit) {  // from Content-Length at once, or as a chunked body grows
        return answer(error_answer(413, fmt::format("the request body is too large (over {} bytes)",
                                                            host_.options().max_body_bytes)));
    }
    answer(error_answer(400, "malformed HTTP request: " + error.message()));
}

void Session::on_request(beast::error_code error) {
    if (error == beast::error::timeout || error == asio::error::eof || error == bhttp::error::end_of_stream ||
        error == asio::error::operation_aborted) {
        return close();
    }
    if (error) return answer_read_error(error);
    auto message = parser_->release();
    keep_alive_ = message.keep_alive() && !host_.stopping();
    Request request{std::string(message.method_string()), target_path(message.target()), {}, std::move(message.body()),
                    target_query(message.target())};
    for (const auto& field : message) request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    dispatch(std::move(request));
}

// Light requests are answered here; the rest go to a worker and come back to this strand with their result.
void Session::dispatch(Request request) {
    stream_.expires_never();
    if (std::optional<Answer> at_once = host_.handler().answer_at_once(request)) return answer(std::move(*at_once));
    if (host_.handler().routes_on_io_thread()) return take_result(route_safely(request));
    host_.run_on_worker([self = shared_from_this(), request = std::move(request)] {
        auto result = std::make_shared<RouteResult>(self->route_safely(request));
        asio::post(self->stream_.get_executor(), [self, result] { self->take_result(std::move(*result)); });
    });
}

RouteResult Session::route_safely(const Request& request) const {
    try {
        return host_.handler().route(request);
    } catch (const std::exception& error) {
        log_error("request to {} failed: {}", request.path, error.what());
        return error_answer(500, "internal error while handling the request");
    }
}

void Session::take_result(RouteResult result) {
    if (auto* job = std::get_if<std::unique_ptr<PendingAnswer>>(&result)) return start_job(std::move(*job));
    answer(std::move(std::get<Answer>(result)));
}

void Session::answer(Answer answer) {
    if (closing_) return;
    auto response = std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(answer.status), 11);
    response->set(bhttp::field::content_type, answer.content_type);
    for (const auto& [name, value] : answer.headers) response->set(name, value);
    response->body() = std::move(answer.body);
    response->keep_alive(keep_alive_);
    response->prepare_payload();
    writing_ = true;
    stream_.expires_after(std::chrono::seconds(host_.options().write_timeout_s));
    bhttp::async_write(stream_, *response,
                      [self = shared_from_this(), response, keep_alive = keep_alive_](beast::error_code error, size_t) {
                          self->writing_ = false;
                          self->on_written(keep_alive, error);
                      });
}

void Session::on_written(bool keep_alive, beast::error_code error) {
    if (!error && request_unread_) return linger_then_close();
    if (error || !keep_alive || !keep_alive_) return close();
    read_header();
}

// After answering a request that was not read whole (413, 431, 400), the client may still be sending it: closing
// with its bytes unread makes the kernel reset the connection, and a client still writing never reads the answer.
// So: stop sending, read and discard for a moment (bounded in time and bytes), then close.
void Session::linger_then_close() {
    beast::error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(kLingerSeconds));
    discard_.resize(kLingerReadBytes);
    discard_input(kLingerMaxBytes);
}

void Session::discard_input(size_t budget) {
    stream_.async_read_some(asio::buffer(discard_), [self = shared_from_this(), budget](beast::error_code error,
                                                                                         size_t bytes) {
        if (error || bytes >= budget) return self->close();
        self->discard_input(budget - bytes);
    });
}

void Session::close() {
    if (closing_) return;
    closing_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    stream_.close();
}

}  // namespace tern::http
