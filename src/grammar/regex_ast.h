// The syntax tree between the regex parser and the GBNF emitter, and the code point sets of character classes.
// Internal to the regex converter (regex_to_gbnf.h is the public entry point).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "grammar/utf8_ranges.h"

namespace tern::grammar::regex {

inline constexpr uint32_t kFirstSurrogate = 0xD800;
inline constexpr uint32_t kLastSurrogate = 0xDFFF;

struct CodePointRange {
    uint32_t first = 0;
    uint32_t last = 0;  // inclusive
};
// Sorted, disjoint and non-adjacent once made by make_code_point_set.
using CodePointSet = std::vector<CodePointRange>;

CodePointSet make_code_point_set(std::vector<CodePointRange> ranges);
CodePointSet complement(const CodePointSet& set);  // within 0..kMaxCodePoint
CodePointSet subtract(const CodePointSet& set, const CodePointSet& removed);
CodePointSet set_union(const CodePointSet& left, const CodePointSet& right);

struct Node;
// Nodes are immutable once made, so subtrees are shared freely (see non_empty_part).
using NodePtr = std::shared_ptr<const Node>;

inline constexpr uint32_t kUnbounded = UINT32_MAX;

struct Node {
    enum class Kind {
        kEmpty,        // the empty string
        kNothing,      // no string at all (a class left empty, e.g. by json_string mode)
        kLiteral,      // one code point written as itself or an escape
        kClass,        // one code point from `chars` (a class, a shorthand or `.`)
        kConcat,       // children in order
        kAlternation,  // one of the children
        kRepeat,       // children[0] between min and max times (max may be kUnbounded)
    };
    Kind kind = Kind::kEmpty;
    uint32_t code_point = 0;  // kLiteral
    CodePointSet chars;       // kClass
    std::vector<NodePtr> children;
    uint32_t min = 0;
    uint32_t max = 0;
    bool nullable = true;  // whether the empty string is in the node's language
};

// Plain constructors keep the tree as written (the parser's output).
NodePtr empty_node();
NodePtr nothing_node();
NodePtr literal_node(uint32_t code_point);
NodePtr class_node(CodePointSet chars);
NodePtr concat_node(std::vector<NodePtr> children);
NodePtr alternation_node(std::vector<NodePtr> children);
NodePtr repeat_node(NodePtr item, uint32_t min, uint32_t max);

// Simplifying constructors used after parsing: they fold kNothing and kEmpty away and keep the invariant that a
// repeated item never matches the empty string: x* with a nullable x is left-recursive through the empty match
// (a stack-based matcher loops on it) and has endless parses of the same text.
NodePtr make_concat(std::vector<NodePtr> children);
NodePtr make_alternation(std::vector<NodePtr> children);
NodePtr make_repeat(NodePtr item, uint32_t min, uint32_t max);

// The node's language without the empty string (kNothing when that leaves nothing). Expects its input to be
// built with the simplifying constructors.
NodePtr non_empty_part(const NodePtr& node);

}  // namespace tern::grammar::regex
