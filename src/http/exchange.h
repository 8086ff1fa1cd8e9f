// What the HTTP layer exchanges with whoever serves it (tern serve's routes, tern route's gateway): a request in, and
// either an answer at once or a pending answer that produces its body later (a generation, a relayed upstream call),
// whole or as SSE events. Nothing here knows about engines or models.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tern::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
    std::string method;  // "GET", "POST", ...
    std::string path;    // the target without its query string
    Headers headers;     // as received
    std::string body;
    std::string query;   // what followed '?' in the target, undecoded ("" when none)

    // The first header of that name (case-insensitive), or "".
    std::string_view header(std::string_view name) const;
    // The value of `name=` in the query, undecoded; nullopt when absent.
    std::optional<std::string> query_value(std::string_view name) const;
};

// A whole response.
struct Answer {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    Headers headers;
};

Answer json_answer(int status, std::string body);
// A 429 or 503 tells the client when to try again: Retry-After: 1 unless the answer has one already.
void add_retry_after_if_refused(Answer& answer);
// Sets Retry-After to `seconds`, replacing any there.
void set_retry_after(Answer& answer, int seconds);
// An OpenAI error body ({"error": {"message", "type", "code", "param"}}); 429 and 503 carry Retry-After: 1.
Answer error_answer(int status, const std::string& message, const std::string& param = "");

// How a pending answer reaches its client. A relayed call knows only when its upstream answers: until then it is
// undecided, and an upstream error before any event is delivered whole with its own status.
enum class Delivery { kUndecided, kWhole, kStream };

// Work whose answer comes later. The HTTP session polls it on the connection's strand whenever the producer signals
// that something arrived, and watches the socket meanwhile: a client that leaves gets client_gone() at once.
class PendingAnswer {
public:
    virtual ~PendingAnswer() = default;

    // May change only from kUndecided, and only to kWhole before any event was taken.
    virtual Delivery delivery() const = 0;
    // `listener` may be called on any thread when the producer has something new: it must only hand work on.
    // The destructor clears it before anything else goes.
    virtual void set_listener(const std::function<void()>& listener) = 0;
    // Takes what arrived, without waiting; a stream appends SSE event data (without the "data: " framing).
    // Returns whether the answer is finished.
    virtual bool poll(std::vector<std::string>& events) = 0;
    // The client left: the work is cancelled at once and the answer is finished.
    virtual void client_gone() = 0;
    // Once finished and delivered whole: the response.
    virtual Answer whole_answer() const = 0;
    // Headers of a streamed response, besides the SSE ones.
    virtual Headers stream_headers() const { return {}; }
    // Called once, on the strand, when the answer went out or the client left (the request log line).
    virtual void delivered() {}
};

using RouteResult = std::variant<Answer, std::unique_ptr<PendingAnswer>>;

// The endpoints behind the HTTP layer. Both calls never throw out (the layer answers 500 if one does).
class Handler {
public:
    virtual ~Handler() = default;
    // Answered on the I/O thread at once (health, metrics, refusals); nullopt: the request goes to route(), on a
    // worker thread.
    virtual std::optional<Answer> answer_at_once(const Request& request) const = 0;
    virtual RouteResult route(const Request& request) const = 0;
    // Whether route() is cheap enough for the I/O thread (tern route: a JSON parse and a hash), sparing the request
    // two thread hand-offs; tern serve's route() tokenizes and renders chat templates, and goes to a worker.
    virtual bool routes_on_io_thread() const { return false; }
};

}  // namespace tern::http
