#include "chat/lexer.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "chat/py_string.h"

namespace tern::chat::jinja {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// "\r\n", "\r" and "\n" all become "\n", and a single trailing newline goes, as Jinja2's tokeniter does.
std::string normalize_newlines(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

// Length of the run of (Python) whitespace starting at `pos`.
size_t whitespace_run(std::string_view text, size_t pos) {
    size_t end = pos;
    while (end < text.size()) {
        size_t next = end;
        if (!py_isspace(decode_utf8(text, next))) break;
        end = next;
    }
    return end - pos;
}

// Digits with single underscores between them (Python's "(\d+_)*\d+"); returns the length, 0 if none.
size_t digit_run(std::string_view text, size_t pos) {
    size_t end = pos;
    if (end >= text.size() || !is_digit(text[end])) return 0;
    while (end < text.size()) {
        if (is_digit(text[end])) {
            ++end;
        } else if (text[end] == '_' && end + 1 < text.size() && is_digit(text[end + 1])) {
            end += 2;
        } else {
            break;
        }
    }
    return end - pos;
}

std::string without_underscores(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c != '_') out += c;
    }
    return out;
}

class Lexer {
public:
    Lexer(std::string source, const LexOptions& options) : src_(std::move(source)), options_(options) {
        line_starts_.push_back(0);
        for (size_t i = 0; i < src_.size(); ++i) {
            if (src_[i] == '\n') line_starts_.push_back(i + 1);
        }
    }

    Result<std::vector<Token>> run() {
        size_t pos = 0;
        while (pos < src_.size()) {
            const size_t tag = find_tag(pos);
            if (tag == std::string::npos) {
                emit_text(pos, src_.substr(pos));
                break;
            }
            TERN_ASSIGN_OR_RETURN(pos, lex_tag(pos, tag));
        }
        Token end;
        end.kind = TokenKind::kEnd;
        end.pos = pos_at(src_.size());
        tokens_.push_back(std::move(end));
        return std::move(tokens_);
    }

private:
    SourcePos pos_at(size_t offset) const {
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        const size_t line_idx = static_cast<size_t>(it - line_starts_.begin()) - 1;
        return {static_cast<int>(line_idx + 1), static_cast<int>(offset - line_starts_[line_idx] + 1)};
    }

    Status error(size_t offset, std::string_view message) const { return positioned_error(pos_at(offset), message); }

    size_t find_tag(size_t from) const {
        size_t pos = src_.find('{', from);
        while (pos != std::string::npos && pos + 1 < src_.size()) {
            const char next = src_[pos + 1];
            if (next == '{' || next == '%' || next == '#') return pos;
            pos = src_.find('{', pos + 1);
        }
        return std::string::npos;
    }

    void emit_text(size_t offset, std::string text) {
        if (text.empty()) return;
        Token token;
        token.kind = TokenKind::kText;
        token.text = std::move(text);
        token.pos = pos_at(offset);
        tokens_.push_back(std::move(token));
    }

    void emit(TokenKind kind, size_t offset, std::string text = {}) {
        Token token;
        token.kind = kind;
        token.text = std::move(text);
        token.pos = pos_at(offset);
        tokens_.push_back(std::move(token));
    }

    // Whitespace control of the text before a tag opened with `sign` ('-', '+' or 0).
    std::string control_text(std::string text, char sign, bool is_variable) const {
        if (sign == '-') return py_strip(text, std::nullopt, false, true);
        if (sign == '+' || !options_.lstrip_blocks || is_variable) return text;
        const size_t newline = text.rfind('\n');
        const size_t line_begin = newline == std::string::npos ? 0 : newline + 1;
        if ((line_begin > 0 || line_starting_) && py_all_space(std::string_view(text).substr(line_begin))) {
            text.resize(line_begin);
        }
        return text;
    }

    // Matches the end of a block or comment ("+%}", "-%}" and following whitespace, "%}" and with trim_blocks one
    // newline) at `pos`; returns the offset after it.
    std::optional<size_t> match_block_end(size_t pos, char closer) const {
        const auto at = [&](size_t i, char c) { return i < src_.size() && src_[i] == c; };
        if (at(pos, '+') && at(pos + 1, closer) && at(pos + 2, '}')) return pos + 3;
        if (at(pos, '-') && at(pos + 1, closer) && at(pos + 2, '}')) return pos + 3 + whitespace_run(src_, pos + 3);
        if (at(pos, closer) && at(pos + 1, '}')) return pos + 2 + ((options_.trim_blocks && at(pos + 2, '\n')) ? 1 : 0);
        return std::nullopt;
    }

    Result<size_t> lex_tag(size_t text_start, size_t tag) {
        const char kind = src_[tag + 1];
        size_t after = tag + 2;
        char sign = 0;
        if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) sign = src_[after++];
        emit_text(text_start, control_text(src_.substr(text_start, tag - text_start), sign, kind == '{'));
        if (kind == '#') return lex_comment(tag, after);
        if (kind == '%') {
            if (auto raw_end = match_raw_begin(after)) return lex_raw(*raw_end);
        }
        return lex_expression_tag(tag, after, kind == '{');
    }

    Result<size_t> lex_comment(size_t tag, size_t content) {
        size_t close = src_.find("#}", content);
        if (close == std::string::npos) return error(tag, "missing end of comment tag");
        size_t end_start = close;
        if (close > content && (src_[close - 1] == '-' || src_[close - 1] == '+')) end_start = close - 1;
        const size_t end = *match_block_end(end_start, '#');
        line_starting_ = src_[end - 1] == '\n';
        return end;
    }

    // "{%[-+]? raw [-]%}": returns the offset after the tag when the tag at `after` (past "{%" and its sign) is raw.
    std::optional<size_t> match_raw_begin(size_t after) const {
        size_t pos = after + whitespace_run(src_, after);
        if (src_.compare(pos, 3, "raw") != 0) return std::nullopt;
        pos += 3;
        pos += whitespace_run(src_, pos);
        if (src_.compare(pos, 3, "-%}") == 0) return pos + 3 + whitespace_run(src_, pos + 3);
        if (src_.compare(pos, 2, "%}") == 0) return pos + 2;
        return std::nullopt;
    }

    Result<size_t> lex_raw(size_t body) {
        for (size_t tag = src_.find("{%", body); tag != std::string::npos; tag = src_.find("{%", tag + 1)) {
            size_t pos = tag + 2;
            char sign = 0;
            if (pos < src_.size() && (src_[pos] == '-' || src_[pos] == '+')) sign = src_[pos++];
            pos += whitespace_run(src_, pos);
            if (src_.compare(pos, 6, "endraw") != 0) continue;
            pos += 6;
            pos += whitespace_run(src_, pos);
            const std::optional<size_t> end = match_block_end(pos, '%');
            if (!end) continue;
            line_starting_ = src_[body - 1] == '\n';
            emit_text(body, control_text(src_.substr(body, tag - body), sign, false));
            line_starting_ = src_[*end - 1] == '\n';
            return *end;
        }
        return error(body, "missing end of raw directive");
    }

    Result<size_t> lex_expression_tag(size_t tag, size_t pos, bool is_variable) {
        emit(is_variable ? TokenKind::kVariableBegin : TokenKind::kBlockBegin, tag);
        std::vector<char> brackets;  // closers expected, innermost last
        while (true) {
            if (pos >= src_.size()) {
                return error(tag, is_variable ? "unexpected end of template, expected '}}'"
                                              : "unexpected end of template, expected '%}'");
            }
            if (brackets.empty()) {
                if (std::optional<size_t> end = match_tag_end(pos, is_variable)) {
                    emit(is_variable ? TokenKind::kVariableEnd : TokenKind::kBlockEnd, pos);
                    line_starting_ = src_[*end - 1] == '\n';
                    return *end;
                }
            }
            if (const size_t ws = whitespace_run(src_, pos); ws > 0) {
                pos += ws;
                continue;
            }
            TERN_ASSIGN_OR_RETURN(pos, lex_one(pos, brackets));
        }
    }

    std::optional<size_t> match_tag_end(size_t pos, bool is_variable) const {
        if (!is_variable) return match_block_end(pos, '%');
        if (src_.compare(pos, 3, "-}}") == 0) return pos + 3 + whitespace_run(src_, pos + 3);
        if (src_.compare(pos, 2, "}}") == 0) return pos + 2;
        return std::nullopt;
    }

    Result<size_t> lex_one(size_t pos, std::vector<char>& brackets) {
        const char c = src_[pos];
        if (is_digit(c)) {
            if (std::optional<size_t> end = lex_float(pos)) return *end;
            return lex_integer(pos);
        }
        if (is_name_start(c)) {
            size_t end = pos + 1;
            while (end < src_.size() && is_name_char(src_[end])) ++end;
            emit(TokenKind::kName, pos, src_.substr(pos, end - pos));
            return end;
        }
        if (c == '\'' || c == '"') return lex_string(pos);
        return lex_operator(pos, brackets);
    }

    std::optional<size_t> lex_float(size_t pos) {
        if (pos > 0 && src_[pos - 1] == '.') return std::nullopt;
        size_t end = pos + digit_run(src_, pos);
        bool fraction = false;
        if (end < src_.size() && src_[end] == '.' && digit_run(src_, end + 1) > 0) {
            end += 1 + digit_run(src_, end + 1);
            fraction = true;
        }
        bool exponent = false;
        if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
            size_t exp = end + 1;
            if (exp < src_.size() && (src_[exp] == '+' || src_[exp] == '-')) ++exp;
            if (const size_t digits = digit_run(src_, exp); digits > 0) {
                end = exp + digits;
                exponent = true;
            }
        }
        if (!fraction && !exponent) return std::nullopt;
        const std::string text = without_underscores(std::string_view(src_).substr(pos, end - pos));
        double value = 0;
        std::from_chars(text.data(), text.data() + text.size(), value);
        Token token;
        token.kind = TokenKind::kFloat;
        token.text = text;
        token.number = value;
        token.pos = pos_at(pos);
        tokens_.push_back(std::move(token));
        return end;
    }

    Result<size_t> lex_integer(size_t pos) {
        int base = 10;
        size_t digits_start = pos;
        size_t end = pos;
        const char prefix = pos + 1 < src_.size() ? static_cast<char>(src_[pos + 1] | 0x20) : 0;
        if (src_[pos] == '0' && (prefix == 'b' || prefix == 'o' || prefix == 'x')) {
            base = prefix == 'b' ? 2 : (prefix == 'o' ? 8 : 16);
            digits_start = end = pos + 2;
            const auto valid = [&](char d) {
                return base == 16 ? is_hex(d) : (d >= '0' && d < static_cast<char>('0' + base));
            };
            while (end < src_.size() && (valid(src_[end]) || (src_[end] == '_' && end + 1 < src_.size() &&
                                                               valid(src_[end + 1])))) {
                ++end;
            }
            if (end == digits_start) return error(pos, "invalid integer literal");
        } else if (src_[pos] == '0') {
            end = pos + 1;  // "0(_?0)*": a leading zero takes only more zeros
            while (end < src_.size() && (src_[end] == '0' || (src_[end] == '_' && end + 1 < src_.size() &&
                                                               src_[end + 1] == '0'))) {
                ++end;
            }
        } else {
            end = pos + digit_run(src_, pos);
        }
        const std::string digits = without_underscores(std::string_view(src_).substr(digits_start, end - digits_start));
        int64_t value = 0;
        const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
        if (result.ec != std::errc()) return error(pos, "integer literal too large");
        Token token;
        token.kind = TokenKind::kInteger;
        token.text = src_.substr(pos, end - pos);
        token.integer = value;
        token.pos = pos_at(pos);
        tokens_.push_back(std::move(token));
        return end;
    }

    Result<size_t> lex_string(size_t pos) {
        const char quote = src_[pos];
        size_t end = pos + 1;
        while (end < src_.size() && src_[end] != quote) end += src_[end] == '\\' ? 2 : 1;
        if (end >= src_.size()) return error(pos, "unterminated string literal");
        TERN_ASSIGN_OR_RETURN(std::string value, unescape(pos, std::string_view(src_).substr(pos + 1, end - pos - 1)));
        emit(TokenKind::kString, pos, std::move(value));
        return end + 1;
    }

    // Python's "unicode-escape" decoding, which Jinja2 applies to string literals.
    Result<std::string> unescape(size_t pos, std::string_view raw) const {
        std::string out;
        for (size_t i = 0; i < raw.size(); ++i) {
            if (raw[i] != '\\' || i + 1 >= raw.size()) {
                out += raw[i];
                continue;
            }
            const char c = raw[++i];
            switch (c) {
                case '\n': break;  // line continuation
                case '\\': out += '\\'; break;
                case '\'': out += '\''; break;
                case '"': out += '"'; break;
                case 'a': out += '\a'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'v': out += '\v'; break;
                case 'x':
                case 'u':
                case 'U': {
                    const size_t width = c == 'x' ? 2 : (c == 'u' ? 4 : 8);
                    if (i + width >= raw.size()) {
                        return error(pos, std::string("truncated \\") + c + " escape in string literal");
                    }
                    uint32_t cp = 0;
                    for (size_t k = 1; k <= width; ++k) {
                        if (!is_hex(raw[i + k])) return error(pos, std::string("truncated \\") + c + " escape in string literal");
                        cp = cp * 16 + static_cast<uint32_t>(is_digit(raw[i + k]) ? raw[i + k] - '0' : (raw[i + k] | 0x20) - 'a' + 10);
                    }
                    if (cp > 0x10FFFF) return error(pos, "illegal Unicode character in string literal");
                    append_utf8(out, cp);
                    i += width;
                    break;
                }
                default:
                    if (c >= '0' && c <= '7') {
                        uint32_t cp = static_cast<uint32_t>(c - '0');
                        for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7'; ++k) {
                            cp = cp * 8 + static_cast<uint32_t>(raw[++i] - '0');
                        }
                        append_utf8(out, cp);
                    } else if (c == 'N') {
                        return error(pos, "\\N{...} escapes are not supported in string literals");
                    } else {
                        out += '\\';  // unknown escapes stay as written
                        out += c;
                    }
            }
        }
        return out;
    }

    Result<size_t> lex_operator(size_t pos, std::vector<char>& brackets) {
        static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
        for (std::string_view op : kTwo) {
            if (src_.compare(pos, 2, op) == 0) {
                emit(TokenKind::kOperator, pos, std::string(op));
                return pos + 2;
            }
        }
        const char c = src_[pos];
        if (std::string_view("+-/*%~[](){}=<>.:|,;").find(c) == std::string_view::npos) {
            size_t next = pos;
            std::string shown;
            append_utf8(shown, decode_utf8(src_, next));
            return error(pos, "unexpected char '" + shown + "'");
        }
        if (c == '(' || c == '[' || c == '{') brackets.push_back(c == '(' ? ')' : (c == '[' ? ']' : '}'));
        if (c == ')' || c == ']' || c == '}') {
            if (brackets.empty()) return error(pos, std::string("unexpected '") + c + "'");
            if (brackets.back() != c) return error(pos, std::string("unexpected '") + c + "', expected '" + brackets.back() + "'");
            brackets.pop_back();
        }
        emit(TokenKind::kOperator, pos, std::string(1, c));
        return pos + 1;
    }

    std::string src_;
    LexOptions options_;
    std::vector<size_t> line_starts_;
    std::vector<Token> tokens_;
    bool line_starting_ = true;  // the last thing matched ended a line (or nothing was matched yet)
};

}  // namespace

std::string positioned_message(SourcePos pos, std::string_view message) {
    return "line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column) + ": " + std::string(message);
}

Status positioned_error(SourcePos pos, std::string_view message) {
    return invalid_argument(positioned_message(pos, message));
}

Result<std::vector<Token>> tokenize(std::string_view source, const LexOptions& options) {
    Lexer lexer(normalize_newlines(source), options);
    return lexer.run();
}

}  // namespace tern::chat::jinja
