#include "grammar/gbnf.h"

#include <cctype>
#include <optional>

#include "grammar/utf8_ranges.h"

namespace tern::grammar {
namespace {

// Beyond this a repetition count is a mistake or an attack.
constexpr uint32_t kMaxRepetition = 10000;

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

class GbnfParser {
public:
    explicit GbnfParser(std::string_view text) : text_(text) {}

    Result<Grammar> parse(std::string_view root) {
        skip_space();
        while (!at_end() && error_.is_ok()) {
            parse_rule();
            skip_space();
        }
        if (!error_.is_ok()) return error_;
        return builder_.build(std::string(root));
    }

private:
    bool at_end() const { return pos_ >= text_.size(); }
    char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

    void fail(const std::string& what) {
        if (!error_.is_ok()) return;
        size_t line = 1, column = 1;
        for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
            column = text_[i] == '\n' ? 1 : column + 1;
            line += text_[i] == '\n';
        }
        error_ = invalid_argument("grammar: " + what + " at line " + std::to_string(line) + ", column " +
                                  std::to_string(column));
        pos_ = text_.size();
    }

    void skip_space() {
        while (!at_end()) {
            if (peek() == '#') {
                while (!at_end() && peek() != '\n') ++pos_;
            } else if (std::isspace(static_cast<unsigned char>(peek()))) {
                ++pos_;
            } else {
                break;
            }
        }
    }

    std::string parse_name() {
        const size_t start = pos_;
        while (!at_end() && is_name_char(peek())) ++pos_;
        return std::string(text_.substr(start, pos_ - start));
    }

    // Whether a `name ::=` starts here: the end of the rule being read.
    bool at_rule_start() const {
        size_t p = pos_;
        while (p < text_.size() && is_name_char(text_[p])) ++p;
        if (p == pos_) return false;
        while (p < text_.size() && std::isspace(static_cast<unsigned char>(text_[p]))) ++p;
        return text_.substr(p, 3) == "::=";
    }

    void parse_rule() {
        const std::string name = parse_name();
        if (name.empty()) return fail("expected a rule name");
        skip_space();
        if (text_.substr(pos_, 3) != "::=") return fail("expected '::=' after '" + name + "'");
        pos_ += 3;
        const uint32_t rule = builder_.rule_id(name);
        if (builder_.defined(rule)) return fail("rule '" + name + "' is defined twice");
        parse_alternatives(rule);
    }

    void parse_alternatives(uint32_t rule) {
        builder_.add_alternative(rule, parse_sequence());
        while (error_.is_ok() && peek() == '|') {
            ++pos_;
            builder_.add_alternative(rule, parse_sequence());
        }
    }

    Sequence parse_sequence() {
        Sequence sequence;
        for (skip_space(); error_.is_ok() && !at_end(); skip_space()) {
            const char c = peek();
            if (c == '|' || c == ')' || at_rule_start()) break;
            Sequence item = parse_primary();
            skip_space();
            item = parse_repetitions(std::move(item));
            sequence.insert(sequence.end(), item.begin(), item.end());
        }
        return sequence;
    }

    Sequence parse_primary() {
        const char c = peek();
        if (c == '"') return parse_literal();
        if (c == '[') return {parse_class()};
        if (c == '.') {
            ++pos_;
            return {class_element({{0, kMaxCodePoint}})};
        }
        if (c == '(') {
            ++pos_;
            const uint32_t group = builder_.fresh_rule("group");
            parse_alternatives(group);
            if (peek() != ')') fail("expected ')'");
            ++pos_;
            return {Element::of_rule(group)};
        }
        if (is_name_char(c)) return {Element::of_rule(builder_.rule_id(parse_name()))};
        fail(std::string("unexpected '") + c + "'");
        return {};
    }

    std::optional<uint32_t> parse_char(bool in_class);
    Sequence parse_literal();
    Element parse_class();
    Element class_element(const CodePointRanges& ranges);
    Sequence parse_repetitions(Sequence item);
    Sequence repeat(const Element& x, uint32_t min, std::optional<uint32_t> max);
    std::optional<std::pair<uint32_t, std::optional<uint32_t>>> parse_braces();
    Element as_one_element(Sequence item);

    std::string_view text_;
    size_t pos_ = 0;
    Status error_;
    GrammarBuilder builder_;
};

std::optional<uint32_t> GbnfParser::parse_char(bool in_class) {
    if (at_end()) return std::nullopt;
    if (peek() != '\\') {
        uint32_t cp = 0;
        if (!decode_utf8(text_, pos_, cp)) {
            fail("invalid UTF-8");
            return std::nullopt;
        }
        return cp;
    }
    ++pos_;
    const char e = peek();
    ++pos_;
    switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/': return static_cast<uint32_t>(e);
        case 'x': case 'u': case 'U': {
            const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (size_t i = 0; i < digits; ++i, ++pos_) {
                if (!std::isxdigit(static_cast<unsigned char>(peek()))) {
                    fail("expected " + std::to_string(digits) + " hex digits after \\" + e);
                    return std::nullopt;
                }
                cp = cp * 16 + static_cast<uint32_t>(std::stoi(std::string(1, peek()), nullptr, 16));
            }
            if (cp > kMaxCodePoint) fail("code point past U+10FFFF");
            return cp;
        }
        default:
            (void)in_class;
            pos_ -= 1;
            fail(std::string("unknown escape '\\") + e + "'");
            return std::nullopt;
    }
}

Sequence GbnfParser::parse_literal() {
    ++pos_;  // the opening quote
    Sequence sequence;
    while (error_.is_ok() && peek() != '"') {
        if (at_end()) {
            fail("unterminated string literal");
            break;
        }
        const std::optional<uint32_t> cp = parse_char(false);
        if (!cp) break;
        for (char byte : encode_utf8(*cp)) sequence.push_back(Element::of_byte(static_cast<uint8_t>(byte)));
    }
    ++pos_;
    return sequence;
}

Element GbnfParser::parse_class() {
    ++pos_;  // '['
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodePointRanges ranges;
    while (error_.is_ok() && peek() != ']') {
        if (at_end()) {
            fail("unterminated character class");
            return {};
        }
        const std::optional<uint32_t> lo = parse_char(true);
        if (!lo) return {};
        uint32_t hi = *lo;
        if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
            ++pos_;
            const std::optional<uint32_t> end = parse_char(true);
            if (!end) return {};
            if (*end < *lo) fail("character range is backwards");
            hi = *end;
        }
        ranges.emplace_back(*lo, hi);
    }
    ++pos_;
    return class_element(negated ? complement(ranges) : ranges);
}

Element GbnfParser::class_element(const CodePointRanges& ranges) {
    std::vector<Sequence> sequences = utf8_sequences(ranges);
    if (sequences.size() == 1 && sequences[0].size() == 1) return sequences[0][0];
    const uint32_t rule = builder_.fresh_rule("char");
    for (Sequence& sequence : sequences) builder_.add_alternative(rule, std::move(sequence));
    // An empty class (e.g. [^\x00-\U0010FFFF]) matches nothing: a rule without alternatives.
    return Element::of_rule(rule);
}

Element GbnfParser::as_one_element(Sequence item) {
    if (item.size() == 1) return item[0];
    const uint32_t rule = builder_.fresh_rule("seq");
    builder_.add_alternative(rule, std::move(item));
    return Element::of_rule(rule);
}

std::optional<std::pair<uint32_t, std::optional<uint32_t>>> GbnfParser::parse_braces() {
    ++pos_;  // '{'
    const auto number = [&]() -> std::optional<uint32_t> {
        skip_space();
        if (!std::isdigit(static_cast<unsigned char>(peek()))) return std::nullopt;
        uint64_t n = 0;
        while (std::isdigit(static_cast<unsigned char>(peek()))) {
            n = std::min<uint64_t>(n * 10 + static_cast<uint64_t>(peek() - '0'), uint64_t{1} << 40);
            ++pos_;
        }
        skip_space();
        if (n > kMaxRepetition) {
            fail("repetition count " + std::to_string(n) + " is above " + std::to_string(kMaxRepetition));
            return std::nullopt;
        }
        return static_cast<uint32_t>(n);
    };
    const std::optional<uint32_t> min = number();
    std::optional<uint32_t> max = min;
    if (peek() == ',') {
        ++pos_;
        max = number();
    } else if (!min) {
        fail("expected a number in {}");
    }
    if (peek() != '}') fail("expected '}'");
    ++pos_;
    if (!error_.is_ok()) return std::nullopt;
    if (min && max && *max < *min) {
        fail("repetition {" + std::to_string(*min) + "," + std::to_string(*max) + "} has max below min");
        return std::nullopt;
    }
    return std::make_pair(min.value_or(0), max);
}

// x* and x+ are left-recursive stars; x{min,max} with a range of three counts or more, or a min above 4, is one
// counted position (see grammar.h); a shorter range is min copies of x then an optional one (opt ::= x | empty).
Sequence GbnfParser::parse_repetitions(Sequence item) {
    while (error_.is_ok() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{')) {
        uint32_t min = 0;
        std::optional<uint32_t> max;
        if (peek() == '{') {
            const auto bounds = parse_braces();
            if (!bounds) return {};
            std::tie(min, max) = *bounds;
        } else {
            min = peek() == '+' ? 1 : 0;
            if (peek() == '?') max = 1;
            ++pos_;
        }
        item = repeat(as_one_element(std::move(item)), min, max);
        skip_space();
    }
    return item;
}

Sequence GbnfParser::repeat(const Element& x, uint32_t min, std::optional<uint32_t> max) {
    const auto counted = [&](uint32_t low, uint32_t high) {
        if (x.is_rule && !x.counted) return Element::of_repeat(x.rule, low, high);
        const uint32_t element = builder_.fresh_rule("rep");
        builder_.add_alternative(element, {x});
        return Element::of_repeat(element, low, high);
    };
    if (max && (*max - min >= 2 || min > 4)) return {counted(min, *max)};
    Sequence item;
    if (min > 4) {
        item.push_back(counted(min, min));
    } else {
        item.assign(min, x);
    }
    if (!max) {
        // Left-recursive on purpose: an Earley parser completes `star ::= star x` in constant work per
        // repetition, while `star ::= x star` leaves a chain of open items that every byte walks again
        // (4,000 bytes of "a"* took 6.9 s that way).
        const uint32_t star = builder_.fresh_rule("star");
        builder_.add_alternative(star, {Element::of_rule(star), x});
        builder_.add_alternative(star, {});
        item.push_back(Element::of_rule(star));
    } else if (*max > min) {
        const uint32_t tail = builder_.fresh_rule("opt");
        builder_.add_alternative(tail, {x});
        builder_.add_alternative(tail, {});
        item.push_back(Element::of_rule(tail));
    }
    return item;
}

}  // namespace

Result<Grammar> parse_gbnf(std::string_view text, std::string_view root) {
    return GbnfParser(text).parse(root);
}

std::string gbnf_literal(std::string_view text) {
    static const char* hex = "0123456789ABCDEF";
    std::string out = "\"";
    for (char c : text) {
        const auto byte = static_cast<uint8_t>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (byte < 0x20 || byte == 0x7F) {
            out += "\\x";
            out += hex[byte >> 4];
            out += hex[byte & 15];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

}  // namespace tern::grammar
