#include "base/printable.h"

#include <fmt/format.h>

#include "base/utf8.h"

namespace tern {

std::string printable(std::string_view text, size_t max_bytes) {
    const std::string_view shown = text.substr(0, max_bytes);
    std::string out;
    out.reserve(shown.size());
    for (size_t pos = 0; pos < shown.size();) {
        const auto byte = static_cast<unsigned char>(shown[pos]);
        if (byte >= 0x80) {
            if (const Utf8Step step = next_utf8_sequence(shown.substr(pos)); step.status == Utf8Status::kValid) {
                out.append(shown.substr(pos, step.length));
                pos += step.length;
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
