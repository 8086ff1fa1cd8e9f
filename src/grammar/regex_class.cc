// Character classes, escapes and UTF-8 decoding for RegexParser (see regex_parser.h).
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "grammar/regex_parser.h"

namespace tern::grammar::regex {

namespace {

// The shorthands keep their ASCII meanings, as PCRE2 without PCRE2_UCP: é is not \w, U+00A0 is not \s.
CodePointSet shorthand_set(char lower_case_letter) {
    switch (lower_case_letter) {
        case 'd': return {{'0', '9'}};
        case 'w': return make_code_point_set({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
        default:  // 's': tab, newline, vertical tab, form feed, carriage return, space
            return {{'\t', '\r'}, {' ', ' '}};
    }
}

struct PosixClass {
    std::string_view name;
    std::vector<CodePointRange> ranges;
};

const std::vector<PosixClass>& posix_classes() {
    static const std::vector<PosixClass> classes = {
        {"alnum", {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}}},
        {"alpha", {{'A', 'Z'}, {'a', 'z'}}},
        {"ascii", {{0, 0x7F}}},
        {"blank", {{'\t', '\t'}, {' ', ' '}}},
        {"cntrl", {{0, 0x1F}, {0x7F, 0x7F}}},
        {"digit", {{'0', '9'}}},
        {"graph", {{'!', '~'}}},
        {"lower", {{'a', 'z'}}},
        {"print", {{' ', '~'}}},
        {"punct", {{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}}},
        {"space", {{'\t', '\r'}, {' ', ' '}}},
        {"upper", {{'A', 'Z'}}},
        {"word", {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}},
        {"xdigit", {{'0', '9'}, {'A', 'F'}, {'a', 'f'}}},
    };
    return classes;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool is_ascii_alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::optional<uint32_t> simple_escape(char letter) {
    switch (letter) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'f': return '\f';
        case 'v': return 0x0B;  // ECMAScript's (and JSON Schema's) meaning; PCRE's \v is a class of vertical spaces
        case 'a': return 0x07;
        case 'e': return 0x1B;
        default: return std::nullopt;
    }
}

}  // namespace

Result<NodePtr> RegexParser::parse_class() {
    const size_t open = pos_;
    ++pos_;
    const bool negated = consume('^');
    CodePointSet members;
    for (bool first = true;; first = false) {
        if (at_end()) return error("unbalanced bracket: this [ is not closed", open);
        if (peek() == ']' && !first) break;  // a ] right after [ or [^ is a member, as in PCRE
        const size_t item_start = pos_;
        TERN_ASSIGN_OR_RETURN(ClassAtom low, parse_class_atom());
        const bool is_range = peek() == '-' && pos_ + 1 < pattern_.size() && peek(1) != ']';
        if (!is_range) {
            members = set_union(members, low.code_point ? CodePointSet{{*low.code_point, *low.code_point}} : low.set);
            continue;
        }
        ++pos_;
        const size_t high_start = pos_;
        TERN_ASSIGN_OR_RETURN(ClassAtom high, parse_class_atom());
        if (!low.code_point || !high.code_point) {
            return error("invalid range in character class: a class such as \\d cannot be an end of a range",
                         low.code_point ? high_start : item_start);
        }
        if (*high.code_point < *low.code_point) {
            return error("invalid range in character class: the start is above the end", item_start);
        }
        members = set_union(members, {{*low.code_point, *high.code_point}});
    }
    ++pos_;
    return class_node(negated ? complement(members) : members);
}

Result<ClassAtom> RegexParser::parse_class_atom() {
    if (peek() == '[' && (peek(1) == ':' || peek(1) == '.' || peek(1) == '=')) return parse_posix_class();
    if (peek() == '\\') return parse_escape(/*in_class=*/true);
    TERN_ASSIGN_OR_RETURN(uint32_t code_point, next_code_point());
    return ClassAtom{code_point, {}};
}

// At "[:", "[." or "[=". Without the matching ":]" (".]", "=]") the [ is an ordinary member, as in PCRE.
Result<ClassAtom> RegexParser::parse_posix_class() {
    const size_t start = pos_;
    const char kind = peek(1);
    size_t scan = pos_ + 2;
    const bool negated = kind == ':' && scan < pattern_.size() && pattern_[scan] == '^';
    if (negated) ++scan;
    const size_t name_start = scan;
    while (scan < pattern_.size() && pattern_[scan] >= 'a' && pattern_[scan] <= 'z') ++scan;
    if (scan + 1 >= pattern_.size() || pattern_[scan] != kind || pattern_[scan + 1] != ']') {
        ++pos_;
        return ClassAtom{'[', {}};
    }
    if (kind != ':') return error("POSIX collating elements are not supported", start);
    const std::string_view name = pattern_.substr(name_start, scan - name_start);
    for (const PosixClass& posix : posix_classes()) {
        if (posix.name != name) continue;
        pos_ = scan + 2;
        const CodePointSet set = make_code_point_set(posix.ranges);
        return ClassAtom{std::nullopt, negated ? complement(set) : set};
    }
    return error("unknown POSIX class name [:" + std::string(name) + ":]", start);
}

// At a backslash, outside or inside a class: a code point, or a set for \d \D \w \W \s \S.
Result<ClassAtom> RegexParser::parse_escape(bool in_class) {
    const size_t start = pos_;
    ++pos_;
    if (at_end()) return error("\\ at the end of the pattern", start);
    const char letter = peek();
    // Any escaped character that is not an ASCII letter or digit stands for itself (\. \\ \- \é).
    if (!is_ascii_alnum(letter)) {
        TERN_ASSIGN_OR_RETURN(uint32_t code_point, next_code_point());
        return ClassAtom{code_point, {}};
    }
    ++pos_;
    if (const std::optional<uint32_t> code_point = simple_escape(letter)) return ClassAtom{code_point, {}};
    switch (letter) {
        case 'd':
        case 'w':
        case 's': return ClassAtom{std::nullopt, shorthand_set(letter)};
        case 'D':
        case 'W':
        case 'S': return ClassAtom{std::nullopt, complement(shorthand_set(static_cast<char>(letter - 'A' + 'a')))};
        case '0': {
            uint32_t value = 0;  // \0 and up to two more octal digits, as in PCRE
            for (int digit_idx = 0; digit_idx < 2 && peek() >= '0' && peek() <= '7'; ++digit_idx) {
                value = value * 8 + static_cast<uint32_t>(pattern_[pos_++] - '0');
            }
            return ClassAtom{value, {}};
        }
        case 'x': {
            TERN_ASSIGN_OR_RETURN(uint32_t code_point, parse_hex_escape());
            return ClassAtom{code_point, {}};
        }
        case 'u': {
            TERN_ASSIGN_OR_RETURN(uint32_t code_point, parse_unicode_escape());
            return ClassAtom{code_point, {}};
        }
        case 'b':
            if (in_class) return ClassAtom{0x08, {}};  // backspace, as in PCRE and ECMAScript
            break;
        default: break;
    }
    return refuse_escape(letter, in_class, start);
}

// The letter escapes with no meaning here, each with the reason.
Status RegexParser::refuse_escape(char letter, bool in_class, size_t start) const {
    if (letter == 'b' || letter == 'B') return error("word boundaries \\b and \\B are not supported", start);
    if (letter == 'A' || letter == 'z' || letter == 'Z' || letter == 'G') {
        return error("anchors other than a leading ^ and a trailing $ are not supported", start);
    }
    if (!in_class && ((letter >= '1' && letter <= '9') || letter == 'g' || letter == 'k')) {
        return error("backreferences are not supported", start);
    }
    if (letter == 'p' || letter == 'P') return error("Unicode properties \\p and \\P are not supported", start);
    return error(std::string("unknown escape \\") + letter, start);
}

// After \x: two hex digits at most, or {hex digits}.
Result<uint32_t> RegexParser::parse_hex_escape() {
    const size_t start = pos_ - 2;
    uint32_t value = 0;
    if (consume('{')) {
        TERN_ASSIGN_OR_RETURN(value, parse_hex_digits(1, 8));
        if (!consume('}')) return error("\\x{ needs hex digits and a closing }", start);
    } else {
        TERN_ASSIGN_OR_RETURN(value, parse_hex_digits(1, 2));
    }
    if (value > kMaxCodePoint) return error("code point above U+10FFFF", start);
    if (value >= kFirstSurrogate && value <= kLastSurrogate) {
        return error("surrogate code points (U+D800..U+DFFF) are not characters", start);
    }
    return value;
}

// After \u: four hex digits (a surrogate pair as two \u escapes, as in JSON and ECMAScript), or {hex digits}.
Result<uint32_t> RegexParser::parse_unicode_escape() {
    const size_t start = pos_ - 2;
    if (peek() == '{') return parse_hex_escape();
    TERN_ASSIGN_OR_RETURN(uint32_t value, parse_hex_digits(4, 4));
    if (value >= 0xD800 && value <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
        const size_t saved = pos_;
        pos_ += 2;
        TERN_ASSIGN_OR_RETURN(uint32_t low, parse_hex_digits(4, 4));
        if (low >= 0xDC00 && low <= kLastSurrogate) return 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00);
        pos_ = saved;
    }
    if (value >= kFirstSurrogate && value <= kLastSurrogate) {
        return error("a \\u surrogate must be a high one followed by a low one", start);
    }
    return value;
}

Result<uint32_t> RegexParser::parse_hex_digits(size_t min_digits, size_t max_digits) {
    const size_t start = pos_;
    uint32_t value = 0;
    while (pos_ - start < max_digits && hex_value(peek()) >= 0) {
        value = value * 16 + static_cast<uint32_t>(hex_value(peek()));
        ++pos_;
    }
    if (pos_ - start < min_digits) {
        return error("expected " + std::to_string(min_digits) + (min_digits == 1 ? " hex digit" : " hex digits"),
                     start);
    }
    return value;
}

// Decodes one UTF-8 character strictly (no overlong forms, no surrogates, nothing above U+10FFFF).
Result<uint32_t> RegexParser::next_code_point() {
    const size_t start = pos_;
    const auto lead = static_cast<uint8_t>(peek());
    const int length = lead < 0x80                   ? 1
                       : lead >= 0xC2 && lead < 0xE0 ? 2
                       : lead >= 0xE0 && lead < 0xF0 ? 3
                       : lead >= 0xF0 && lead < 0xF5 ? 4
                                                     : 0;
    if (length == 0 || start + length > pattern_.size()) return error("invalid UTF-8", start);
    static constexpr std::array<uint32_t, 5> kLeadMask = {0, 0x7F, 0x1F, 0x0F, 0x07};
    static constexpr std::array<uint32_t, 5> kSmallest = {0, 0, 0x80, 0x800, 0x10000};
    uint32_t value = lead & kLeadMask[length];
    for (int byte_idx = 1; byte_idx < length; ++byte_idx) {
        const auto byte = static_cast<uint8_t>(pattern_[start + byte_idx]);
        if ((byte & 0xC0) != 0x80) return error("invalid UTF-8", start);
        value = (value << 6) | (byte & 0x3F);
    }
    if (value < kSmallest[length] || value > kMaxCodePoint || (value >= kFirstSurrogate && value <= kLastSurrogate)) {
        return error("invalid UTF-8", start);
    }
    pos_ += length;
    return value;
}

}  // namespace tern::grammar::regex
