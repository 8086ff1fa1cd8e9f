#include "grammar/regex_parser.h"

#include <tuple>
#include <utility>
#include <vector>

namespace tern::grammar::regex {

namespace {

// Deeper nesting is no real pattern; the limit keeps the recursive parser and emitter far from the stack's end.
constexpr int kMaxGroupDepth = 200;
// Counts are expanded into copies of the item, so they bound the grammar's size.
constexpr uint32_t kMaxRepetitionCount = 1000;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_name_char(char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && is_digit(c));
}

}  // namespace

Result<NodePtr> parse_regex(std::string_view pattern) { return RegexParser(pattern).parse(); }

Result<NodePtr> RegexParser::parse() {
    consume('^');  // the whole text must match anyway
    TERN_ASSIGN_OR_RETURN(NodePtr root, parse_alternation(0));
    // parse_alternation stops only at the end or at a ')' that no group opened.
    if (!at_end()) return error("unbalanced parenthesis: ) without a matching (", pos_);
    return root;
}

bool RegexParser::consume(char expected) {
    if (at_end() || pattern_[pos_] != expected) return false;
    ++pos_;
    return true;
}

Status RegexParser::error(const std::string& what, size_t offset) const {
    return invalid_argument("regex: " + what + " (at offset " + std::to_string(offset) + ")");
}

Result<NodePtr> RegexParser::parse_alternation(int depth) {
    std::vector<NodePtr> branches;
    do {
        TERN_ASSIGN_OR_RETURN(NodePtr branch, parse_sequence(depth));
        branches.push_back(std::move(branch));
    } while (consume('|'));
    if (branches.size() == 1) return branches[0];
    return alternation_node(std::move(branches));
}

Result<NodePtr> RegexParser::parse_sequence(int depth) {
    std::vector<NodePtr> items;
    while (!at_end() && peek() != '|' && peek() != ')') {
        const size_t start = pos_;
        if (peek() == '$') {
            if (pos_ + 1 == pattern_.size()) {
                ++pos_;
                break;
            }
            return error("$ is only supported at the end of the pattern", start);
        }
        if (peek() == '^') return error("^ is only supported at the start of the pattern", start);
        TERN_ASSIGN_OR_RETURN(bool quantifier, quantifier_ahead());
        if (quantifier) return error("quantifier with nothing to repeat", start);
        TERN_ASSIGN_OR_RETURN(NodePtr atom, parse_atom(depth));
        TERN_ASSIGN_OR_RETURN(NodePtr item, parse_quantifiers(std::move(atom)));
        items.push_back(std::move(item));
    }
    if (items.empty()) return empty_node();
    if (items.size() == 1) return items[0];
    return concat_node(std::move(items));
}

Result<NodePtr> RegexParser::parse_atom(int depth) {
    switch (peek()) {
        case '(': return parse_group(depth + 1);
        case '[': return parse_class();
        case '.':
            ++pos_;
            return class_node(complement({{'\n', '\n'}}));  // PCRE's default: every code point but a newline
        case '\\': {
            TERN_ASSIGN_OR_RETURN(ClassAtom escaped, parse_escape(/*in_class=*/false));
            if (escaped.code_point) return literal_node(*escaped.code_point);
            return class_node(std::move(escaped.set));
        }
        default: {
            TERN_ASSIGN_OR_RETURN(uint32_t code_point, next_code_point());
            return literal_node(code_point);
        }
    }
}

Result<NodePtr> RegexParser::parse_group(int depth) {
    const size_t open = pos_;
    if (depth > kMaxGroupDepth) {
        return error("groups are nested deeper than " + std::to_string(kMaxGroupDepth), open);
    }
    ++pos_;
    if (peek() == '*') return error("(*VERB) control verbs and options are not supported", open);
    if (peek() == '?') TERN_RETURN_IF_ERROR(parse_group_kind());
    TERN_ASSIGN_OR_RETURN(NodePtr body, parse_alternation(depth));
    if (!consume(')')) return error("unbalanced parenthesis: this ( is not closed", open);
    return body;
}

// After "(?": accepts the kinds that only group (non-capturing, named, branch reset) and names the rest.
Status RegexParser::parse_group_kind() {
    const size_t start = pos_ - 1;
    ++pos_;
    const char kind = peek();
    switch (kind) {
        case ':':
        case '|':  // branch reset only renumbers captures
            ++pos_;
            return Status::ok();
        case '<':
            if (peek(1) == '=' || peek(1) == '!') return error("lookbehind is not supported", start);
            ++pos_;
            return parse_group_name('>');
        case '\'': ++pos_; return parse_group_name('\'');
        case 'P':
            if (peek(1) == '<') {
                pos_ += 2;
                return parse_group_name('>');
            }
            if (peek(1) == '=') return error("backreferences are not supported", start);
            return error("recursion and subroutine calls are not supported", start);
        case '=':
        case '!': return error("lookahead is not supported", start);
        case '>':
            return error("atomic groups are not supported: they can reject strings the plain group accepts", start);
        case '#': return error("comments (?#...) are not supported", start);
        case '(': return error("conditional groups are not supported", start);
        case '&':
        case 'R':
        case '+': return error("recursion and subroutine calls are not supported", start);
        default:
            if (is_digit(kind)) return error("recursion and subroutine calls are not supported", start);
            if (is_name_char(kind, true) || kind == '-' || kind == '^' || kind == ')') {
                return error("inline flags such as (?i) are not supported", start);
            }
            return error("unknown group syntax (?" + std::string(1, kind), start);
    }
}

Status RegexParser::parse_group_name(char terminator) {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek(), pos_ == start)) ++pos_;
    if (pos_ == start || !consume(terminator)) {
        return error(std::string("invalid group name: expected letters, digits or _ and then ") + terminator, start);
    }
    return Status::ok();
}

Result<bool> RegexParser::quantifier_ahead() {
    const char c = peek();
    if (c == '*' || c == '+' || c == '?') return true;
    if (c != '{') return false;
    const size_t saved = pos_;
    TERN_ASSIGN_OR_RETURN(auto bounds, parse_braces());
    pos_ = saved;
    return bounds.has_value();
}

Result<NodePtr> RegexParser::parse_quantifiers(NodePtr item) {
    const size_t start = pos_;
    uint32_t min = 0;
    uint32_t max = kUnbounded;
    switch (peek()) {
        case '*': ++pos_; break;
        case '+':
            min = 1;
            ++pos_;
            break;
        case '?':
            max = 1;
            ++pos_;
            break;
        case '{': {
            TERN_ASSIGN_OR_RETURN(auto bounds, parse_braces());
            if (!bounds) return item;  // a literal brace, read as the next atom
            std::tie(min, max) = *bounds;
            break;
        }
        default: return item;
    }
    if (peek() == '+') {
        return error(
            "possessive quantifiers are not supported: they can reject strings the plain quantifier accepts "
            "(a++a matches nothing)",
            start);
    }
    consume('?');  // lazy: the same whole-text matches as greedy
    TERN_ASSIGN_OR_RETURN(bool another, quantifier_ahead());
    if (another) return error("a quantifier cannot follow another quantifier (wrap the first in (?:...))", pos_);
    return repeat_node(std::move(item), min, max);
}

Result<uint32_t> RegexParser::parse_count(std::string_view digits, size_t offset) const {
    if (digits.size() > 4 || std::stoul(std::string(digits)) > kMaxRepetitionCount) {
        return error(
            "repetition count " + std::string(digits) + " is above the limit of " + std::to_string(kMaxRepetitionCount),
            offset);
    }
    return static_cast<uint32_t>(std::stoul(std::string(digits)));
}

Result<std::optional<std::pair<uint32_t, uint32_t>>> RegexParser::parse_braces() {
    using Bounds = std::optional<std::pair<uint32_t, uint32_t>>;
    const size_t open = pos_;
    size_t scan = pos_ + 1;
    auto read_digits = [&] {
        const size_t first = scan;
        while (scan < pattern_.size() && is_digit(pattern_[scan])) ++scan;
        return pattern_.substr(first, scan - first);
    };
    const std::string_view min_digits = read_digits();
    if (min_digits.empty() || scan >= pattern_.size()) return Bounds{};
    std::string_view max_digits = min_digits;
    bool unbounded = false;
    if (pattern_[scan] == ',') {
        ++scan;
        max_digits = read_digits();
        unbounded = max_digits.empty();
    }
    if (scan >= pattern_.size() || pattern_[scan] != '}') return Bounds{};  // e.g. a{,3} or a{x}: PCRE2 10.42 literals
    TERN_ASSIGN_OR_RETURN(uint32_t min, parse_count(min_digits, open));
    uint32_t max = kUnbounded;
    if (!unbounded) {
        TERN_ASSIGN_OR_RETURN(max, parse_count(max_digits, open));
        if (min > max) return error("{n,m} with n > m", open);
    }
    pos_ = scan + 1;
    return Bounds{{min, max}};
}

}  // namespace tern::grammar::regex
