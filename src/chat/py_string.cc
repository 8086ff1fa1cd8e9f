#include "chat/py_string.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/utf8.h"

namespace tern::chat::jinja {
namespace {

bool is_ascii_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_ascii_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_ascii_letter(char c) { return is_ascii_upper(c) || is_ascii_lower(c); }
char to_upper(char c) { return is_ascii_lower(c) ? static_cast<char>(c - 'a' + 'A') : c; }
char to_lower(char c) { return is_ascii_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

// Code points of `chars` for strip(chars).
std::vector<char32_t> code_points(std::string_view text) {
    std::vector<char32_t> out;
    for (size_t pos = 0; pos < text.size();) out.push_back(decode_utf8(text, pos));
    return out;
}

bool in_set(char32_t cp, const std::optional<std::vector<char32_t>>& set) {
    if (!set) return py_isspace(cp);
    for (char32_t c : *set) {
        if (c == cp) return true;
    }
    return false;
}

// Splits on runs of whitespace, at most `maxsplit` times from the left, as CPython's split_whitespace does.
std::vector<std::string> split_whitespace(std::string_view text, int64_t maxsplit) {
    std::vector<std::string> out;
    const std::vector<size_t> offsets = code_point_offsets(text);
    const size_t count = offsets.size() - 1;
    size_t idx = 0;
    auto space_at = [&](size_t i) {
        size_t pos = offsets[i];
        return py_isspace(decode_utf8(text, pos));
    };
    while (idx < count) {
        while (idx < count && space_at(idx)) ++idx;
        if (idx == count) break;
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
            // CPython keeps the remainder's trailing whitespace.
            out.emplace_back(text.substr(offsets[idx]));
            break;
        }
        const size_t start = idx;
        while (idx < count && !space_at(idx)) ++idx;
        out.emplace_back(text.substr(offsets[start], offsets[idx] - offsets[start]));
    }
    return out;
}

// Mirror of split_whitespace from the right.
std::vector<std::string> rsplit_whitespace(std::string_view text, int64_t maxsplit) {
    std::vector<std::string> reversed;
    const std::vector<size_t> offsets = code_point_offsets(text);
    size_t idx = offsets.size() - 1;  // one past the code point under consideration
    auto space_at = [&](size_t i) {
        size_t pos = offsets[i];
        return py_isspace(decode_utf8(text, pos));
    };
    while (idx > 0) {
        while (idx > 0 && space_at(idx - 1)) --idx;
        if (idx == 0) break;
        if (static_cast<int64_t>(reversed.size()) == maxsplit) {
            // CPython keeps the remainder's leading whitespace.
            reversed.emplace_back(text.substr(0, offsets[idx]));
            break;
        }
        const size_t end = idx;
        while (idx > 0 && !space_at(idx - 1)) --idx;
        reversed.emplace_back(text.substr(offsets[idx], offsets[end] - offsets[idx]));
    }
    return {reversed.rbegin(), reversed.rend()};
}

}  // namespace

char32_t decode_utf8(std::string_view text, size_t& pos) {
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(pos);
    int extra = 0;
    char32_t cp = 0;
    char32_t min = 0;
    if (lead >= 0xC2 && lead < 0xE0) {
        extra = 1, cp = lead & 0x1F, min = 0x80;
    } else if (lead >= 0xE0 && lead < 0xF0) {
        extra = 2, cp = lead & 0x0F, min = 0x800;
    } else if (lead >= 0xF0 && lead < 0xF5) {
        extra = 3, cp = lead & 0x07, min = 0x10000;
    }
    if (extra == 0 || pos + extra >= text.size()) {
        ++pos;
        return lead;
    }
    for (int i = 1; i <= extra; ++i) {
        if ((byte(pos + i) & 0xC0) != 0x80) {
            ++pos;
            return lead;
        }
        cp = (cp << 6) | (byte(pos + i) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        ++pos;
        return lead;
    }
    pos += extra + 1;
    return cp;
}

void append_utf8(std::string& out, char32_t cp) { tern::append_utf8(out, static_cast<uint32_t>(cp)); }

bool py_isspace(char32_t cp) {
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
    if (cp < 0x85) return false;
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool py_all_space(std::string_view text) {
    if (text.empty()) return false;
    for (size_t pos = 0; pos < text.size();) {
        if (!py_isspace(decode_utf8(text, pos))) return false;
    }
    return true;
}

size_t py_length(std::string_view text) {
    size_t count = 0;
    for (size_t pos = 0; pos < text.size(); ++count) decode_utf8(text, pos);
    return count;
}

std::vector<size_t> code_point_offsets(std::string_view text) {
    std::vector<size_t> offsets;
    offsets.reserve(text.size() + 1);
    for (size_t pos = 0; pos < text.size();) {
        offsets.push_back(pos);
        decode_utf8(text, pos);
    }
    offsets.push_back(text.size());
    return offsets;
}

std::string py_strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right) {
    std::optional<std::vector<char32_t>> set;
    if (chars) set = code_points(*chars);
    const std::vector<size_t> offsets = code_point_offsets(text);
    size_t begin = 0;
    size_t end = offsets.size() - 1;
    auto at = [&](size_t i) {
        size_t pos = offsets[i];
        return decode_utf8(text, pos);
    };
    if (left) {
        while (begin < end && in_set(at(begin), set)) ++begin;
    }
    if (right) {
        while (end > begin && in_set(at(end - 1), set)) --end;
    }
    return std::string(text.substr(offsets[begin], offsets[end] - offsets[begin]));
}

std::vector<std::string> py_split(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit) {
    if (!sep) return split_whitespace(text, maxsplit);
    std::vector<std::string> out;
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
        const size_t hit = text.find(*sep, start);
        if (hit == std::string_view::npos) break;
        out.emplace_back(text.substr(start, hit - start));
        start = hit + sep->size();
    }
    out.emplace_back(text.substr(start));
    return out;
}

std::vector<std::string> py_rsplit(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit) {
    if (maxsplit < 0) return py_split(text, sep, maxsplit);
    if (!sep) return rsplit_whitespace(text, maxsplit);
    std::vector<std::string> reversed;
    size_t end = text.size();
    while (static_cast<int64_t>(reversed.size()) < maxsplit) {
        if (end < sep->size()) break;
        const size_t hit = text.rfind(*sep, end - sep->size());
        if (hit == std::string_view::npos) break;
        reversed.emplace_back(text.substr(hit + sep->size(), end - hit - sep->size()));
        end = hit;
    }
    std::vector<std::string> out;
    out.emplace_back(text.substr(0, end));
    for (auto it = reversed.rbegin(); it != reversed.rend(); ++it) out.push_back(*it);
    return out;
}

std::vector<std::string> py_splitlines(std::string_view text, bool keep_ends) {
    std::vector<std::string> out;
    size_t start = 0;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t cp_start = pos;
        const char32_t cp = decode_utf8(text, pos);
        const bool is_break = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
                              cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (!is_break) continue;
        if (cp == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
        out.emplace_back(text.substr(start, (keep_ends ? pos : cp_start) - start));
        start = pos;
    }
    if (start < text.size()) out.emplace_back(text.substr(start));
    return out;
}

std::string py_replace(std::string_view text, std::string_view old_text, std::string_view new_text, int64_t count) {
    std::string out;
    if (old_text.empty()) {
        // Python inserts `new` before every code point and at the end.
        const std::vector<size_t> offsets = code_point_offsets(text);
        int64_t done = 0;
        for (size_t i = 0; i + 1 < offsets.size(); ++i) {
            if (count < 0 || done < count) {
                out += new_text;
                ++done;
            }
            out += text.substr(offsets[i], offsets[i + 1] - offsets[i]);
        }
        if (count < 0 || done < count) out += new_text;
        return out;
    }
    size_t start = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        const size_t hit = text.find(old_text, start);
        if (hit == std::string_view::npos) break;
        out += text.substr(start, hit - start);
        out += new_text;
        start = hit + old_text.size();
        ++done;
    }
    out += text.substr(start);
    return out;
}

std::string py_upper(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = to_upper(c);
    return out;
}

std::string py_lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = to_lower(c);
    return out;
}

std::string py_capitalize(std::string_view text) {
    std::string out = py_lower(text);
    if (!out.empty()) out[0] = to_upper(out[0]);
    return out;
}

std::string py_title(std::string_view text) {
    std::string out(text);
    bool previous_cased = false;
    for (char& c : out) {
        if (is_ascii_letter(c)) {
            c = previous_cased ? to_lower(c) : to_upper(c);
            previous_cased = true;
        } else {
            // Non-ASCII bytes count as uncased here; Python would look them up in the Unicode tables.
            previous_cased = false;
        }
    }
    return out;
}

std::string jinja_title(std::string_view text) {
    std::string out(text);
    bool word_start = true;
    for (size_t i = 0; i < out.size();) {
        const size_t start = i;
        const char32_t cp = decode_utf8(out, i);
        const bool separator = py_isspace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
        if (separator) {
            word_start = true;
            continue;
        }
        if (i == start + 1) out[start] = word_start ? to_upper(out[start]) : to_lower(out[start]);
        word_start = false;
    }
    return out;
}

std::string quoted(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    out += '\'';
    out += text;
    out += '\'';
    return out;
}

std::string py_repr_string(std::string_view text) {
    const bool has_single = text.find('\'') != std::string_view::npos;
    const bool has_double = text.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (size_t pos = 0; pos < text.size();) {
        const char32_t cp = decode_utf8(text, pos);
        char buffer[16];
        if (cp == static_cast<char32_t>(quote) || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp == '\t') {
            out += "\\t";
        } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0xA0) || cp == 0xAD) {
            std::snprintf(buffer, sizeof(buffer), "\\x%02x", static_cast<unsigned>(cp));
            out += buffer;
        } else {
            append_utf8(out, cp);
        }
    }
    out += quote;
    return out;
}

std::string py_float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
    const std::string sci(buffer, result.ptr);
    // sci looks like "-1.2345e+17": split sign, digits and decimal exponent.
    size_t pos = 0;
    std::string sign;
    if (sci[0] == '-') {
        sign = "-";
        pos = 1;
    }
    const size_t e_pos = sci.find('e');
    std::string digits;
    for (size_t i = pos; i < e_pos; ++i) {
        if (sci[i] != '.') digits += sci[i];
    }
    const int exponent = std::stoi(sci.substr(e_pos + 1));
    const int decimal_point = exponent + 1;  // digits[0..decimal_point) are the integer part
    if (decimal_point <= -4 || decimal_point > 16) {
        std::string out = sign + digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        std::snprintf(buffer, sizeof(buffer), "e%c%02d", exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
        return out + buffer;
    }
    if (decimal_point <= 0) return sign + "0." + std::string(-decimal_point, '0') + digits;
    if (static_cast<size_t>(decimal_point) >= digits.size()) {
        return sign + digits + std::string(decimal_point - digits.size(), '0') + ".0";
    }
    return sign + digits.substr(0, decimal_point) + "." + digits.substr(decimal_point);
}

}  // namespace tern::chat::jinja
