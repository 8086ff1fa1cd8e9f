// The bytes that can come right after each rule, in any sentence: the classic FOLLOW sets, one byte deep. The token
// masks use them to refuse, once at compile time, tokens that run past the end of a rule into a byte nothing could
// take there; without them every token starting with a space was "uncertain" at a whitespace rule and checked live
// (570 ms for one mask over Qwen2's 152k tokens).
#pragma once

#include <vector>

#include "grammar/grammar.h"

namespace tern::grammar {

// By rule id.
std::vector<ByteSet> follow_sets(const Grammar& grammar);
// The bytes that can come once the element at `position` is done (the rest of its alternative, or what follows its
// rule); `follow` from follow_sets.
ByteSet bytes_after(const Grammar& grammar, const std::vector<ByteSet>& follow, uint32_t position);

}  // namespace tern::grammar
