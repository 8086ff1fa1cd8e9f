// Scanning a model's output as it streams: the whitespace between its parts (JSON's four characters), and how much
// of a marker the text may have begun at its end. Shared by the tool-call and reasoning parsers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace tern::tools {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline std::string_view trim_left(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    return text;
}

inline std::string_view trim_right(std::string_view text) {
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

// The longest tail of `text` that `marker` starts with (the whole marker included): what must be held back while
// more text may complete the marker.
inline size_t marker_prefix_at_end(std::string_view text, std::string_view marker) {
    for (size_t length = std::min(text.size(), marker.size()); length > 0; --length) {
        if (text.substr(text.size() - length) == marker.substr(0, length)) return length;
    }
    return 0;
}

}  // namespace tern::tools
