// The Jinja2 lexer: template text, {{ }} / {% %} / {# #} tags, {% raw %}, and whitespace control exactly as
// Jinja2 3.x applies it: "-" strips all whitespace on that side, "+" keeps it, lstrip_blocks removes the spaces
// before a block or comment tag that starts a line, trim_blocks removes the newline after a block or comment tag.
// Newlines are normalized to "\n" and one trailing newline is dropped (keep_trailing_newline=False).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tern::chat::jinja {

struct SourcePos {
    int line = 1;
    int column = 1;  // 1-based, in bytes of the normalized source
};

// "line L, column C: message": every error of the interpreter carries the place it refers to.
std::string positioned_message(SourcePos pos, std::string_view message);
Status positioned_error(SourcePos pos, std::string_view message);

enum class TokenKind {
    kText,           // template data between tags, already whitespace-controlled
    kVariableBegin,  // {{
    kVariableEnd,    // }}
    kBlockBegin,     // {%
    kBlockEnd,       // %}
    kName,
    kString,   // text holds the unescaped value
    kInteger,  // integer holds the value
    kFloat,    // number holds the value
    kOperator,  // text holds the operator, e.g. "//" or "["
    kEnd,
};

struct Token {
    TokenKind kind = TokenKind::kEnd;
    std::string text;
    SourcePos pos;
    int64_t integer = 0;
    double number = 0;
};

struct LexOptions {
    bool trim_blocks = true;
    bool lstrip_blocks = true;
};

// The whole token stream, ending with kEnd. Fails on unterminated tags, strings or comments, unbalanced brackets
// inside a tag, stray characters and malformed escapes, with the line and column.
Result<std::vector<Token>> tokenize(std::string_view source, const LexOptions& options);

}  // namespace tern::chat::jinja
