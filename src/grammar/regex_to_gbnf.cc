#include "grammar/regex_to_gbnf.h"

#include <cstdio>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/regex_ast.h"
#include "grammar/regex_parser.h"

namespace tern::grammar {

namespace {

using regex::CodePointSet;
using regex::Node;
using regex::NodePtr;

std::string gbnf_escape(uint32_t code_point) {
    if (code_point == '\n') return "\\n";
    if (code_point == '\r') return "\\r";
    if (code_point == '\t') return "\\t";
    char text[16];
    if (code_point < 0x80) {
        std::snprintf(text, sizeof(text), "\\x%02X", static_cast<unsigned>(code_point));
    } else if (code_point < 0x10000) {
        std::snprintf(text, sizeof(text), "\\u%04X", static_cast<unsigned>(code_point));
    } else {
        std::snprintf(text, sizeof(text), "\\U%08X", static_cast<unsigned>(code_point));
    }
    return text;
}

bool is_printable_ascii(uint32_t code_point) { return code_point >= 0x20 && code_point < 0x7F; }

// One code point inside a GBNF "..." literal.
std::string literal_char(uint32_t code_point) {
    if (code_point == '"' || code_point == '\\') return std::string{'\\', static_cast<char>(code_point)};
    if (is_printable_ascii(code_point)) return std::string(1, static_cast<char>(code_point));
    return gbnf_escape(code_point);
}

// One code point inside a GBNF [...] class; the characters a class treats specially are spelled in hex so that no
// dialect question (is \^ an escape?) arises.
std::string class_char(uint32_t code_point) {
    static constexpr std::string_view kSpecial = "[]-^\\\"";
    if (is_printable_ascii(code_point) && kSpecial.find(static_cast<char>(code_point)) == std::string_view::npos) {
        return std::string(1, static_cast<char>(code_point));
    }
    return gbnf_escape(code_point);
}

std::string class_text(const CodePointSet& set) {
    std::string text;
    if (set.size() == 1 && set[0].first == set[0].last) {
        text = "\"";
        text += literal_char(set[0].first);
        return text + "\"";
    }
    text = "[";
    for (const regex::CodePointRange& range : set) {
        text += class_char(range.first);
        if (range.last == range.first) continue;
        if (range.last > range.first + 1) text += '-';
        text += class_char(range.last);
    }
    return text + "]";
}

bool needs_json_escape(uint32_t code_point) { return code_point < 0x20 || code_point == '"' || code_point == '\\'; }

// The JSON escape of `code_point` as GBNF elements, e.g. "\\n", or "\\u001" [fF] (either case of hex digit).
void append_json_escape(uint32_t code_point, std::string& quoted, std::vector<std::string>& elements) {
    switch (code_point) {
        case '"': quoted += "\\\\\\\""; return;
        case '\\': quoted += "\\\\\\\\"; return;
        case '\b': quoted += "\\\\b"; return;
        case '\f': quoted += "\\\\f"; return;
        case '\n': quoted += "\\\\n"; return;
        case '\r': quoted += "\\\\r"; return;
        case '\t': quoted += "\\\\t"; return;
        default: break;
    }
    static constexpr std::string_view kHexDigits = "0123456789abcdef";
    quoted += "\\\\u00";
    quoted += kHexDigits[code_point >> 4];
    const char low_digit = kHexDigits[code_point & 0xF];
    if (low_digit < 'a') {
        quoted += low_digit;
        return;
    }
    elements.push_back("\"" + quoted + "\"");
    quoted.clear();
    elements.push_back(std::string{'[', low_digit, static_cast<char>(low_digit - 'a' + 'A'), ']'});
}

bool is_composite(const Node& node) {
    return node.kind == Node::Kind::kConcat || node.kind == Node::Kind::kAlternation ||
           node.kind == Node::Kind::kRepeat;
}

// Writes the rules for one normalized tree (see regex_ast.h: no kNothing, repeated items never nullable).
class GbnfEmitter {
public:
    GbnfEmitter(std::string_view rule_name, bool json_string) : rule_name_(rule_name), json_string_(json_string) {}

    std::string emit(const NodePtr& root) {
        count_references(root);
        std::string text = rule_name_ + " ::= " + alternatives(root) + "\n";
        for (const std::string& line : helper_rules_) text += line + "\n";
        return text;
    }

private:
    void count_references(const NodePtr& node) {
        if (++reference_counts_[node.get()] > 1) return;
        for (const NodePtr& child : node->children) count_references(child);
    }

    std::string add_rule(const std::string& body) {
        std::string name = rule_name_ + "-" + std::to_string(helper_rules_.size() + 1);
        helper_rules_.push_back(name + " ::= " + body);
        return name;
    }

    // A rule body: a | b | c.
    std::string alternatives(const NodePtr& node) {
        if (node->kind != Node::Kind::kAlternation) return sequence(node);
        std::string text;
        for (const NodePtr& child : node->children) text += (text.empty() ? "" : " | ") + sequence(child);
        return text;
    }

    // Elements one after another; runs of literals become one GBNF literal.
    std::string sequence(const NodePtr& node) {
        if (node->kind == Node::Kind::kEmpty) return "\"\"";
        if (node->kind != Node::Kind::kConcat) return element(node);
        std::vector<std::string> parts;
        std::vector<uint32_t> literal_run;
        auto flush_run = [&] {
            for (std::string& literal : literal_elements(literal_run)) parts.push_back(std::move(literal));
            literal_run.clear();
        };
        for (const NodePtr& child : node->children) {
            if (child->kind == Node::Kind::kLiteral) {
                literal_run.push_back(child->code_point);
                continue;
            }
            flush_run();
            parts.push_back(element(child));
        }
        flush_run();
        return join(parts);
    }

    // Something that can stand in a sequence.
    std::string element(const NodePtr& node) {
        if (is_composite(*node) && reference_counts_[node.get()] > 1) return shared_rule(node);
        switch (node->kind) {
            case Node::Kind::kLiteral: return join(literal_elements({node->code_point}));
            case Node::Kind::kClass: return class_text(node->chars);
            case Node::Kind::kRepeat: return repetition(*node);
            case Node::Kind::kConcat:
            case Node::Kind::kAlternation: return parenthesized(alternatives(node));
            default: return "\"\"";  // kEmpty
        }
    }

    // Nodes reached along several paths (non_empty_part shares suffixes) are written once, as a rule.
    std::string shared_rule(const NodePtr& node) {
        auto found = shared_rule_names_.find(node.get());
        if (found != shared_rule_names_.end()) return found->second;
        // Not element(node): that would find the node shared again and come back here.
        std::string name = add_rule(node->kind == Node::Kind::kRepeat ? repetition(*node) : alternatives(node));
        shared_rule_names_.emplace(node.get(), name);
        return name;
    }

    // Exactly one GBNF element for an item that is repeated: an atom, or a rule holding the item.
    std::string repeated_item(const NodePtr& item) {
        if (item->kind == Node::Kind::kClass) return class_text(item->chars);
        if (item->kind == Node::Kind::kLiteral) {
            std::vector<std::string> literal = literal_elements({item->code_point});
            if (literal.size() == 1) return literal[0];
        }
        if (reference_counts_[item.get()] > 1) return shared_rule(item);
        return add_rule(alternatives(item));
    }

    // x{n,m} written out: n copies, then m - n optional ones as a chain of rules "(x next)?", so that no rule nests
    // a thousand parentheses. x* and x+ stay GBNF's own: the item never matches empty (regex_ast.h), so they are
    // not left-recursive.
    std::string repetition(const Node& node) {
        const std::string item = repeated_item(node.children[0]);
        std::vector<std::string> parts;
        if (node.max == regex::kUnbounded) {
            parts.assign(node.min == 0 ? 0 : node.min - 1, item);
            parts.push_back(item + (node.min == 0 ? "*" : "+"));
            return join(parts);
        }
        parts.assign(node.min, item);
        if (node.max > node.min) {
            std::string optional_tail = item + "?";
            for (uint32_t extra = 2; extra <= node.max - node.min; ++extra) {
                optional_tail = add_rule("(" + item + " " + optional_tail + ")?");
            }
            parts.push_back(optional_tail);
        }
        return join(parts);
    }

    std::vector<std::string> literal_elements(const std::vector<uint32_t>& code_points) const {
        std::vector<std::string> elements;
        std::string quoted;
        for (uint32_t code_point : code_points) {
            if (json_string_ && needs_json_escape(code_point)) {
                append_json_escape(code_point, quoted, elements);
            } else {
                quoted += literal_char(code_point);
            }
        }
        if (!quoted.empty()) elements.push_back("\"" + quoted + "\"");
        return elements;
    }

    static std::string parenthesized(const std::string& text) {
        std::string result = "(";
        result += text;
        return result + ")";
    }

    static std::string join(const std::vector<std::string>& parts) {
        std::string text;
        for (const std::string& part : parts) text += (text.empty() ? "" : " ") + part;
        return text;
    }

    std::string rule_name_;
    bool json_string_;
    std::vector<std::string> helper_rules_;
    std::unordered_map<const Node*, int> reference_counts_;
    std::unordered_map<const Node*, std::string> shared_rule_names_;
};

// The parsed tree rebuilt with the simplifying constructors; classes lose surrogates (never in valid UTF-8) and, in
// json_string mode, the characters JSON must escape.
NodePtr lower(const NodePtr& node, bool json_string) {
    switch (node->kind) {
        case Node::Kind::kClass: {
            CodePointSet removed = {{regex::kFirstSurrogate, regex::kLastSurrogate}};
            if (json_string) removed = regex::set_union(removed, {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
            CodePointSet kept = regex::subtract(node->chars, removed);
            return kept.empty() ? regex::nothing_node() : regex::class_node(std::move(kept));
        }
        case Node::Kind::kConcat:
        case Node::Kind::kAlternation: {
            std::vector<NodePtr> children;
            for (const NodePtr& child : node->children) children.push_back(lower(child, json_string));
            return node->kind == Node::Kind::kConcat ? regex::make_concat(std::move(children))
                                                     : regex::make_alternation(std::move(children));
        }
        case Node::Kind::kRepeat:
            return regex::make_repeat(lower(node->children[0], json_string), node->min, node->max);
        default: return node;
    }
}

bool is_valid_rule_name(std::string_view name) {
    if (name.empty()) return false;
    for (char c : name) {
        const bool valid =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!valid) return false;
    }
    return true;
}

}  // namespace

Result<std::string> regex_to_gbnf(std::string_view pattern, std::string_view rule_name, const RegexOptions& options) {
    if (!is_valid_rule_name(rule_name)) {
        return invalid_argument("regex: rule name '" + std::string(rule_name) +
                                "' must be one or more letters, digits, _ or -");
    }
    TERN_ASSIGN_OR_RETURN(NodePtr parsed, regex::parse_regex(pattern));
    const NodePtr lowered = lower(parsed, options.json_string);
    if (lowered->kind == Node::Kind::kNothing) {
        return invalid_argument(options.json_string ? "regex: the pattern matches no string once control characters, "
                                                      "\" and \\ are left out of its classes (json_string mode)"
                                                    : "regex: the pattern matches no string");
    }
    return GbnfEmitter(rule_name, options.json_string).emit(lowered);
}

}  // namespace tern::grammar
