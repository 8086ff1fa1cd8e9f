// Small helpers on text shared by modules that parse it (header lines, length specs).
#pragma once

#include <cctype>
#include <string_view>

namespace tern {

// `text` without leading and trailing whitespace (std::isspace: spaces, tabs, CR, LF, VT, FF).
inline std::string_view trim_space(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    return text;
}

}  // namespace tern
