// Server-sent events (the text/event-stream format of the WHATWG HTML spec): an incremental parser that turns bytes,
// fed as they arrive in pieces of any size, into events; and the writer side for servers. No HTTP here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tern::api {

struct SseEvent {
    std::string event;  // the "event:" field; empty for the default "message"
    std::string data;   // the "data:" lines joined with '\n'
    std::string id;
};

// Not thread-safe; one parser per stream. Lines end with "\n" or "\r\n"; comment lines (":...") are skipped; an event
// is dispatched by a blank line. A bare "\r" line ending (allowed by the spec, sent by no LLM server) is not supported.
class SseParser {
public:
    // Appends to `out` every event completed by `bytes`.
    void feed(std::string_view bytes, std::vector<SseEvent>* out);
    // At the end of the stream: dispatches a last event that had data but no closing blank line, as lenient clients do.
    void finish(std::vector<SseEvent>* out);
    // Bytes received but not yet part of a dispatched event.
    size_t pending_bytes() const { return buffer_.size() - consumed_ + (has_data_ ? pending_.data.size() : 0); }

private:
    void process_line(std::string_view line, std::vector<SseEvent>* out);

    std::string buffer_;
    size_t consumed_ = 0;  // bytes of buffer_ already split into lines
    SseEvent pending_;
    bool has_data_ = false;
};

// "data: <data>\n\n", with every '\n' inside `data` starting a new data line.
std::string format_sse_data(std::string_view data);

}  // namespace tern::api
