#include "base/printable.h"

#include <fmt/format.h>

namespace tern {
namespace {

// The length of the valid UTF-8 sequence starting at text[pos], or 0 when none starts there.
size_t utf8_sequence_at(std::string_view text, size_t pos) {
    const auto lead = static_cast<unsigned char>(text[pos]);
    const size_t length = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 && lead <= 0xDF ? 2 : 0;
    if (length == 0 || pos + length > text.size()) return 0;
    for (size_t idx = 1; idx < length; ++idx) {
        if ((static_cast<unsigned char>(text[pos + idx]) & 0xC0) != 0x80) return 0;
    }
    const auto second = static_cast<unsigned char>(text[pos + 1]);
    if ((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second > 0x9F) || (lead == 0xF0 && second < 0x90) ||
        (lead == 0xF4 && second > 0x8F)) {
        return 0;  // overlong, a UTF-16 surrogate, or past U+10FFFF
    }
    return length;
}

}  // namespace

std::string printable(std::string_view text, size_t max_bytes) {
    const std::string_view shown = text.substr(0, max_bytes);
    std::string out;
    out.reserve(shown.size());
    for (size_t pos = 0; pos < shown.size();) {
        const auto byte = static_cast<unsigned char>(shown[pos]);
        if (byte >= 0x80) {
            if (const size_t length = utf8_sequence_at(shown, pos); length > 0) {
                out.append(shown.substr(pos, length));
                pos += length;
                continue;
            }
        }
        if (byte == '\n') {
            out += "\\n";
        } else if (byte == '\t') {
            out += "\\t";
        } else if (byte == '\\') {
            out += "\\\\";
        } else if (byte < 0x20 || byte >= 0x7F) {
            out += fmt::format("\\x{:02x}", byte);
        } else {
            out += static_cast<char>(byte);
        }
        ++pos;
    }
    if (text.size() > max_bytes) out += "...";
    return out;
}

}  // namespace tern
