// Regex text to the syntax tree of regex_ast.h, with the errors regex_to_gbnf.h promises. Internal to the regex
// converter; the parser is split over regex_parser.cc (structure) and regex_class.cc (classes and escapes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "grammar/regex_ast.h"

namespace tern::grammar::regex {

// The tree as written (plain constructors); the leading ^ and trailing $ are already dropped.
Result<NodePtr> parse_regex(std::string_view pattern);

// What one escape or class member stands for: a single code point, or a set such as \d.
struct ClassAtom {
    std::optional<uint32_t> code_point;
    CodePointSet set;
};

class RegexParser {
public:
    explicit RegexParser(std::string_view pattern) : pattern_(pattern) {}
    Result<NodePtr> parse();

private:
    Result<NodePtr> parse_alternation(int depth);
    Result<NodePtr> parse_sequence(int depth);
    Result<NodePtr> parse_atom(int depth);
    Result<NodePtr> parse_group(int depth);
    Status parse_group_kind();
    Result<NodePtr> parse_quantifiers(NodePtr item);
    // Reads {n}, {n,} or {n,m} at pos_ (advancing past it); nullopt (pos_ unchanged) when the brace is a literal.
    Result<std::optional<std::pair<uint32_t, uint32_t>>> parse_braces();
    Result<uint32_t> parse_count(std::string_view digits, size_t offset) const;
    Result<bool> quantifier_ahead();
    Status parse_group_name(char terminator);

    // regex_class.cc
    Result<NodePtr> parse_class();
    Result<ClassAtom> parse_class_atom();
    Result<ClassAtom> parse_posix_class();
    Result<ClassAtom> parse_escape(bool in_class);
    Status refuse_escape(char letter, bool in_class, size_t start) const;
    Result<uint32_t> parse_hex_escape();
    Result<uint32_t> parse_unicode_escape();
    Result<uint32_t> parse_hex_digits(size_t min_digits, size_t max_digits);
    Result<uint32_t> next_code_point();

    bool at_end() const { return pos_ >= pattern_.size(); }
    char peek(size_t ahead = 0) const { return pos_ + ahead < pattern_.size() ? pattern_[pos_ + ahead] : '\0'; }
    bool consume(char expected);
    Status error(const std::string& what, size_t offset) const;

    std::string_view pattern_;
    size_t pos_ = 0;
};

}  // namespace tern::grammar::regex
