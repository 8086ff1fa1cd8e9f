#include "api/sse.h"

namespace tern::api {

void SseParser::feed(std::string_view bytes, std::vector<SseEvent>* out) {
    buffer_.append(bytes);
    while (true) {
        const size_t newline = buffer_.find('\n', consumed_);
        if (newline == std::string::npos) break;
        std::string_view line(buffer_.data() + consumed_, newline - consumed_);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        consumed_ = newline + 1;
        process_line(line, out);
    }
    // Compact only once the consumed prefix dominates, so a stream of small chunks costs O(bytes) overall.
    if (consumed_ > 0 && consumed_ * 2 >= buffer_.size()) {
        buffer_.erase(0, consumed_);
        consumed_ = 0;
    }
}

void SseParser::finish(std::vector<SseEvent>* out) {
    if (consumed_ < buffer_.size()) {
        std::string rest = buffer_.substr(consumed_);
        buffer_.clear();
        consumed_ = 0;
        if (!rest.empty() && rest.back() == '\r') rest.pop_back();
        process_line(rest, out);
    }
    process_line("", out);
}

void SseParser::process_line(std::string_view line, std::vector<SseEvent>* out) {
    if (line.empty()) {
        if (has_data_) out->push_back(std::move(pending_));
        pending_ = SseEvent();
        has_data_ = false;
        return;
    }
    if (line.front() == ':') return;
    const size_t colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "data") {
        if (has_data_) pending_.data.push_back('\n');
        pending_.data.append(value);
        has_data_ = true;
    } else if (field == "event") {
        pending_.event.assign(value);
    } else if (field == "id") {
        pending_.id.assign(value);
    }
}

std::string format_sse_data(std::string_view data) {
    std::string out;
    out.reserve(data.size() + 8);
    size_t start = 0;
    while (true) {
        const size_t newline = data.find('\n', start);
        out += "data: ";
        out.append(data.substr(start, newline == std::string_view::npos ? std::string_view::npos : newline - start));
        out += '\n';
        if (newline == std::string_view::npos) break;
        start = newline + 1;
    }
    out += '\n';
    return out;
}

}  // namespace tern::api
