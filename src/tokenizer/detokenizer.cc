#include "tokenizer/detokenizer.h"

#include <algorithm>

#include <fmt/format.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace tern {
namespace {

constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";  // U+2581
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";   // U+FFFD

std::string unescape_spaces(std::string_view text) {
    std::string result;
    result.reserve(text.size());
    size_t pos = 0;
    for (size_t found = text.find(kEscapedSpace); found != std::string_view::npos;
         found = text.find(kEscapedSpace, pos)) {
        result.append(text.substr(pos, found - pos));
        result.push_back(' ');
        pos = found + kEscapedSpace.size();
    }
    result.append(text.substr(pos));
    return result;
}

// Maps each character of a byte-level token back to its byte. A character outside the map is written out as
// llama.cpp does, so that such vocabularies remain visible rather than silently lose text.
std::string byte_decode(std::string_view text) {
    std::string result;
    for (uint32_t cpt : unicode::decode_utf8(text)) {
        if (const auto byte = unicode::unicode_to_byte(cpt)) {
            result.push_back(static_cast<char>(*byte));
            continue;
        }
        std::string utf8;
        unicode::append_utf8(cpt, utf8);
        result += "[UNK_BYTE_0x";
        for (char c : utf8) result += fmt::format("{:02x}", static_cast<uint8_t>(c));
        result += text;
        result += "]";
    }
    return result;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The byte of a "<0xNN>" token; like llama.cpp's strtol, parsing stops at the first non-hex character.
uint8_t byte_token_value(std::string_view text) {
    unsigned value = 0;
    for (char c : text.substr(std::min<size_t>(3, text.size()), 2)) {
        const int digit = hex_digit(c);
        if (digit < 0) break;
        value = value * 16 + static_cast<unsigned>(digit);
    }
    return static_cast<uint8_t>(value);
}

}  // namespace

std::string render_piece(const TokenTable& table, VocabKind kind, int32_t id) {
    const std::string& text = table.text(id);
    if (table.has_attr(id, kAttrUnknown | kAttrControl | kAttrUserDefined)) return text;
    if (table.has_attr(id, kAttrNormal)) return kind == VocabKind::kSpm ? unescape_spaces(text) : byte_decode(text);
    if (table.has_attr(id, kAttrByte)) return std::string(1, static_cast<char>(byte_token_value(text)));
    return {};
}

void clean_up_spaces(std::string& text) {
    // Three passes over the text, each reading the previous pass's output, as in llama.cpp's detokenize.
    auto pass = [&](auto&& keep_space_before) {
        if (text.empty()) return;
        std::string out;
        out.reserve(text.size());
        out.push_back(text[0]);
        for (size_t i = 1; i < text.size(); ++i) {
            if (text[i - 1] == ' ' && !keep_space_before(i)) out.pop_back();
            out.push_back(text[i]);
        }
        text = std::move(out);
    };
    pass([&](size_t i) { return !(text[i] == '?' || text[i] == '!' || text[i] == '.' || text[i] == ','); });
    // " ' " loses both spaces. llama.cpp blanks the skipped space in place, so it no longer counts as the space
    // before the next character; `src` reproduces that.
    if (!text.empty()) {
        std::string src = text;
        std::string out;
        out.push_back(src[0]);
        for (size_t i = 1; i < src.size(); ++i) {
            const char c = src[i];
            const bool lone_quote = c == '\'' && i + 1 < src.size() && src[i - 1] == ' ' && src[i + 1] == ' ';
            if (lone_quote) out.pop_back();
            out.push_back(c);
            if (lone_quote) src[++i] = '\0';
        }
        text = std::move(out);
    }
    pass([&](size_t i) {
        if (text[i] != '\'' || i + 1 >= text.size()) return true;
        const char next = text[i + 1];
        if (next == 's' || next == 'm') return false;
        if (next == 't' || next == 'd' || i + 2 >= text.size()) return true;
        const char after = text[i + 2];
        return !((next == 'r' && after == 'e') || (next == 'v' && after == 'e'));
    });
}

std::string StreamingDetokenizer::push(int32_t id) {
    pending_ += tokenizer_.token_to_piece(id, render_special_);
    std::string out;
    size_t pos = 0;
    while (pos < pending_.size()) {
        const unicode::Utf8Step step = unicode::next_utf8_sequence(std::string_view(pending_).substr(pos));
        if (step.status == unicode::Utf8Status::kIncomplete) break;
        if (step.status == unicode::Utf8Status::kValid) {
            out.append(pending_, pos, step.length);
        } else {
            out += kReplacement;
        }
        pos += step.length;
    }
    pending_.erase(0, pos);
    return out;
}

std::string StreamingDetokenizer::flush() {
    std::string out = pending_.empty() ? std::string() : std::string(kReplacement);
    pending_.clear();
    return out;
}

}  // namespace tern
