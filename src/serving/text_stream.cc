#include "serving/text_stream.h"

#include <algorithm>

namespace tern::serving {

TextStream::TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop_strings, bool render_special)
    : detokenizer_(tokenizer, render_special), stop_strings_(std::move(stop_strings)) {
    std::erase_if(stop_strings_, [](const std::string& stop) { return stop.empty(); });
}

std::string TextStream::release(size_t length) {
    std::string text = pending_.substr(0, length);
    pending_.erase(0, length);
    emitted_ += text;
    return text;
}

// The longest tail of pending_ that is a proper prefix of some stop string: it may still grow into a match.
size_t TextStream::held_suffix_length() const {
    size_t longest = 0;
    for (const std::string& stop : stop_strings_) {
        const size_t max_length = std::min(stop.size() - 1, pending_.size());
        for (size_t length = max_length; length > longest; --length) {
            if (pending_.compare(pending_.size() - length, length, stop, 0, length) == 0) {
                longest = length;
                break;
            }
        }
    }
    return longest;
}

// Cuts at the first stop-string match, or releases what can no longer become one (everything when `final`).
std::string TextStream::advance(bool final) {
    size_t first_match = std::string::npos;
    for (const std::string& stop : stop_strings_) first_match = std::min(first_match, pending_.find(stop));
    if (first_match != std::string::npos) {
        stopped_ = true;
        std::string text = release(first_match);
        pending_.clear();
        return text;
    }
    return release(final ? pending_.size() : pending_.size() - held_suffix_length());
}

std::string TextStream::push(int32_t token) {
    if (stopped_) return {};
    pending_ += detokenizer_.push(token);
    return advance(false);
}

std::string TextStream::finish() {
    if (stopped_) return {};
    pending_ += detokenizer_.flush();
    return advance(true);
}

}  // namespace tern::serving
