// The bytes that can come right after each rule, in any sentence: the classic FOLLOW sets, one byte deep. The token
// masks use them to refuse, once at compile time, tokens that run past the end of a rule into a byte nothing could
// take there; without them every token starting with a space was "uncertain" at a whitespace rule and checked live
// (570 ms for one mask over Qwen2's 152k tokens).
#pragma once

#include <vector>

#include "grammar/grammar.h"

namespace tern::grammar {

struct FollowSets {
    std::vector<ByteSet> first;   // by rule id: the bytes the rule can begin with
    std::vector<ByteSet> follow;  // by rule id: the bytes that can come right after it
    // The bytes that can come once the element at `position` is done (the rest of its alternative, or what follows
    // its rule).
    ByteSet bytes_after(const Grammar& grammar, uint32_t position) const;
};

FollowSets follow_sets(const Grammar& grammar);

}  // namespace tern::grammar
