#include "grammar/follow_sets.h"

#include <utility>

namespace tern::grammar {
namespace {

// The bytes that can start the rest of an alternative from `position`; whether that rest can be empty.
bool first_of_rest(const Grammar& grammar, const std::vector<ByteSet>& first, uint32_t position, ByteSet& out) {
    for (;; ++position) {
        const Position& at = grammar.at(position);
        if (at.kind == Position::kEnd) return true;
        if (at.kind == Position::kBytes) {
            out |= grammar.bytes_at(position);
            return false;
        }
        out |= first[at.index];
        const bool may_skip = at.kind == Position::kRepeat && at.min == 0;
        if (!grammar.nullable(at.index) && !may_skip) return false;
    }
}

std::vector<ByteSet> first_sets(const Grammar& grammar) {
    std::vector<ByteSet> first(grammar.rules().size());
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t rule = 0; rule < grammar.rules().size(); ++rule) {
            ByteSet bytes = first[rule];
            for (uint32_t alternative : grammar.rules()[rule].alternatives) first_of_rest(grammar, first, alternative, bytes);
            if (bytes != first[rule]) {
                first[rule] = bytes;
                changed = true;
            }
        }
    }
    return first;
}

}  // namespace

ByteSet FollowSets::bytes_after(const Grammar& grammar, uint32_t position) const {
    ByteSet bytes;
    if (first_of_rest(grammar, first, position + 1, bytes)) bytes |= follow[grammar.rule_of(position)];
    return bytes;
}

FollowSets follow_sets(const Grammar& grammar) {
    std::vector<ByteSet> first = first_sets(grammar);
    std::vector<ByteSet> follow(grammar.rules().size());
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t position = 0; position < grammar.positions().size(); ++position) {
            const Position& at = grammar.at(position);
            if (!at.refers_to_rule()) continue;
            ByteSet bytes = follow[at.index];
            if (first_of_rest(grammar, first, position + 1, bytes)) bytes |= follow[grammar.rule_of(position)];
            if (at.kind == Position::kRepeat && at.max > 1) bytes |= first[at.index];  // the rule again
            if (bytes != follow[at.index]) {
                follow[at.index] = bytes;
                changed = true;
            }
        }
    }
    return {std::move(first), std::move(follow)};
}

}  // namespace tern::grammar
