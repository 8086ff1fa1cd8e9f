#include "tokenizer/unicode.h"

#include <array>

#include "base/utf8.h"

namespace tern::unicode {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

struct ByteMaps {
    std::array<std::string, 256> to_unicode;
    std::array<int32_t, 324> to_byte;  // indexed by code point; the stand-ins all lie below U+0144

    ByteMaps() {
        to_byte.fill(-1);
        auto keeps_itself = [](int byte) {
            return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
        };
        int next_free = 256;
        for (int byte = 0; byte < 256; ++byte) {
            const uint32_t cpt = keeps_itself(byte) ? static_cast<uint32_t>(byte) : static_cast<uint32_t>(next_free++);
            append_utf8(cpt, to_unicode[byte]);
            to_byte[cpt] = byte;
        }
    }
};

const ByteMaps& byte_maps() {
    static const ByteMaps maps;
    return maps;
}

}  // namespace

size_t utf8_sequence_length(uint8_t lead) {
    static constexpr std::array<uint8_t, 16> kLengths = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLengths[lead >> 4];
}

std::vector<uint32_t> decode_utf8(std::string_view text) {
    std::vector<uint32_t> cpts;
    cpts.reserve(text.size());
    const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
    const size_t size = text.size();
    size_t pos = 0;
    while (pos < size) {
        const uint8_t lead = bytes[pos];
        size_t length = 0;
        uint32_t cpt = 0;
        if (lead < 0x80) {
            length = 1;
            cpt = lead;
        } else if ((lead & 0xE0) == 0xC0) {
            length = 2;
            cpt = lead & 0x1F;
        } else if ((lead & 0xF0) == 0xE0) {
            length = 3;
            cpt = lead & 0x0F;
        } else if ((lead & 0xF8) == 0xF0) {
            length = 4;
            cpt = lead & 0x07;
        }
        bool ok = length > 0 && pos + length <= size;
        for (size_t i = 1; ok && i < length; ++i) {
            ok = is_continuation(bytes[pos + i]);
            cpt = (cpt << 6) | (bytes[pos + i] & 0x3F);
        }
        if (!ok) {
            cpts.push_back(kReplacementChar);
            pos += 1;
            continue;
        }
        cpts.push_back(cpt <= kMaxCodePoint ? cpt : kReplacementChar);
        pos += length;
    }
    return cpts;
}

void append_utf8(uint32_t cpt, std::string& out) { tern::append_utf8(out, cpt); }

bool is_whitespace(uint32_t cpt) {
    if (cpt < 0x80) return (cpt >= 0x09 && cpt <= 0x0D) || cpt == 0x20;
    switch (cpt) {
        case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
            return true;
        default:
            return cpt >= 0x2000 && cpt <= 0x200A;
    }
}

const std::string& byte_to_unicode(uint8_t byte) { return byte_maps().to_unicode[byte]; }

std::optional<uint8_t> unicode_to_byte(uint32_t cpt) {
    const auto& table = byte_maps().to_byte;
    if (cpt >= table.size() || table[cpt] < 0) return std::nullopt;
    return static_cast<uint8_t>(table[cpt]);
}

std::string byte_encode(std::string_view text) {
    const ByteMaps& maps = byte_maps();
    std::string out;
    out.reserve(text.size() * 2);
    for (char c : text) out += maps.to_unicode[static_cast<uint8_t>(c)];
    return out;
}


}  // namespace tern::unicode
