#include "grammar/regex_ast.h"

#include <algorithm>
#include <utility>

#include "grammar/utf8_ranges.h"

namespace tern::grammar::regex {

namespace {

CodePointRanges as_pairs(const std::vector<CodePointRange>& ranges) {
    CodePointRanges pairs;
    for (const CodePointRange& range : ranges) pairs.emplace_back(range.first, range.last);
    return pairs;
}

CodePointSet from_pairs(const CodePointRanges& pairs) {
    CodePointSet set;
    for (const auto& [first, last] : pairs) set.push_back({first, last});
    return set;
}

}  // namespace

// Both through utf8_ranges' normalize (sorted, merged, surrogates out: they have no UTF-8 spelling anyway).
CodePointSet make_code_point_set(std::vector<CodePointRange> ranges) { return from_pairs(normalize(as_pairs(ranges))); }

CodePointSet complement(const CodePointSet& set) { return from_pairs(grammar::complement(as_pairs(set))); }

CodePointSet set_union(const CodePointSet& left, const CodePointSet& right) {
    std::vector<CodePointRange> all(left);
    all.insert(all.end(), right.begin(), right.end());
    return make_code_point_set(std::move(all));
}

CodePointSet subtract(const CodePointSet& set, const CodePointSet& removed) {
    return complement(set_union(complement(set), removed));
}

namespace {

Node blank_node(Node::Kind kind, bool nullable) {
    Node node;
    node.kind = kind;
    node.nullable = nullable;
    return node;
}

NodePtr make_node(Node::Kind kind, bool nullable, std::vector<NodePtr> children = {}) {
    Node node = blank_node(kind, nullable);
    node.children = std::move(children);
    return std::make_shared<const Node>(std::move(node));
}

bool all_nullable(const std::vector<NodePtr>& nodes) {
    return std::all_of(nodes.begin(), nodes.end(), [](const NodePtr& node) { return node->nullable; });
}

bool any_nullable(const std::vector<NodePtr>& nodes) {
    return std::any_of(nodes.begin(), nodes.end(), [](const NodePtr& node) { return node->nullable; });
}

// Children of nested nodes of `kind` are lifted into their parent: (a(bc)) and a(bc) are the same language.
std::vector<NodePtr> flattened(std::vector<NodePtr> children, Node::Kind kind) {
    std::vector<NodePtr> flat;
    for (NodePtr& child : children) {
        if (child->kind == kind) {
            flat.insert(flat.end(), child->children.begin(), child->children.end());
        } else {
            flat.push_back(std::move(child));
        }
    }
    return flat;
}

}  // namespace

NodePtr empty_node() { return make_node(Node::Kind::kEmpty, /*nullable=*/true); }
NodePtr nothing_node() { return make_node(Node::Kind::kNothing, /*nullable=*/false); }

NodePtr literal_node(uint32_t code_point) {
    Node node = blank_node(Node::Kind::kLiteral, /*nullable=*/false);
    node.code_point = code_point;
    return std::make_shared<const Node>(std::move(node));
}

NodePtr class_node(CodePointSet chars) {
    Node node = blank_node(Node::Kind::kClass, /*nullable=*/false);
    node.chars = std::move(chars);
    return std::make_shared<const Node>(std::move(node));
}

NodePtr concat_node(std::vector<NodePtr> children) {
    const bool nullable = all_nullable(children);
    return make_node(Node::Kind::kConcat, nullable, std::move(children));
}

NodePtr alternation_node(std::vector<NodePtr> children) {
    const bool nullable = any_nullable(children);
    return make_node(Node::Kind::kAlternation, nullable, std::move(children));
}

NodePtr repeat_node(NodePtr item, uint32_t min, uint32_t max) {
    Node node = blank_node(Node::Kind::kRepeat, /*nullable=*/min == 0 || item->nullable);
    node.children.push_back(std::move(item));
    node.min = min;
    node.max = max;
    return std::make_shared<const Node>(std::move(node));
}

NodePtr make_concat(std::vector<NodePtr> children) {
    std::vector<NodePtr> kept;
    for (NodePtr& child : flattened(std::move(children), Node::Kind::kConcat)) {
        if (child->kind == Node::Kind::kNothing) return child;
        if (child->kind != Node::Kind::kEmpty) kept.push_back(std::move(child));
    }
    if (kept.empty()) return empty_node();
    if (kept.size() == 1) return kept[0];
    return concat_node(std::move(kept));
}

NodePtr make_alternation(std::vector<NodePtr> children) {
    std::vector<NodePtr> kept;
    bool has_empty = false;
    for (NodePtr& child : flattened(std::move(children), Node::Kind::kAlternation)) {
        if (child->kind == Node::Kind::kNothing) continue;
        if (child->kind == Node::Kind::kEmpty) {
            // One empty alternative says it all; more would only add matcher stacks.
            if (has_empty) continue;
            has_empty = true;
        }
        kept.push_back(std::move(child));
    }
    if (kept.empty()) return nothing_node();
    if (kept.size() == 1) return kept[0];
    return alternation_node(std::move(kept));
}

NodePtr make_repeat(NodePtr item, uint32_t min, uint32_t max) {
    if (max == 0 || item->kind == Node::Kind::kEmpty) return empty_node();
    if (item->kind == Node::Kind::kNothing) return min == 0 ? empty_node() : item;
    if (item->nullable) {
        // X{n,m} with X nullable: the copies that match nothing can be dropped, so it is (X minus ε){0,m}.
        item = non_empty_part(item);
        min = 0;
        if (item->kind == Node::Kind::kNothing) return empty_node();
    }
    if (min == 1 && max == 1) return item;
    // (Y+)* is Y*, (Y+)+ is Y+, (Y+){3,} is Y{3,}: runs of one or more Y, repeated without bound, are just Y's. Kept
    // nested, the grammar is ambiguous in every split of the text and the Earley sets grow with it: (\D+)* took
    // 98 s of masks over 1,000 bytes on a 1,024-token vocabulary.
    if (max == kUnbounded && item->kind == Node::Kind::kRepeat && item->min == 1 && item->max == kUnbounded) {
        return make_repeat(item->children[0], min, kUnbounded);
    }
    return repeat_node(std::move(item), min, max);
}

NodePtr non_empty_part(const NodePtr& node) {
    if (!node->nullable) return node;
    switch (node->kind) {
        case Node::Kind::kAlternation: {
            std::vector<NodePtr> parts;
            for (const NodePtr& child : node->children) parts.push_back(non_empty_part(child));
            return make_alternation(std::move(parts));
        }
        case Node::Kind::kRepeat:
            // Nullable with a non-nullable item means min == 0 (make_repeat's invariant).
            return make_repeat(node->children[0], 1, node->max);
        case Node::Kind::kConcat: {
            // Every child is nullable. A non-empty match has a first child that matches something:
            // (c1 - ε) c2..cn | (c2 - ε) c3..cn | ... | (cn - ε). The suffixes are shared, not copied.
            std::vector<NodePtr> parts;
            const std::vector<NodePtr>& children = node->children;
            for (size_t first_idx = 0; first_idx < children.size(); ++first_idx) {
                std::vector<NodePtr> sequence{non_empty_part(children[first_idx])};
                sequence.insert(sequence.end(), children.begin() + first_idx + 1, children.end());
                parts.push_back(make_concat(std::move(sequence)));
            }
            return make_alternation(std::move(parts));
        }
        default: return nothing_node();  // kEmpty
    }
}

}  // namespace tern::grammar::regex
