// Runs many tokens through a chart from its current last set, in the vocabulary's sorted order: the work for a
// prefix shared with the previous token is kept (the chart is truncated back to it, not rebuilt), and every token
// under a prefix the chart refused gets the same verdict without being run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "grammar/matcher.h"
#include "grammar/token_vocabulary.h"

namespace tern::grammar {

// kAcceptedMayLeave: accepted inside a counted repetition whose leaving the walk noted but did not follow (its
// count is unknown at compile time); leaving might take the token too.
enum class TokenVerdict { kAccepted, kAcceptedMayLeave, kRefused, kUncertain };

// When the chart started inside a rule with nothing around it: that rule, and the bytes that can follow it anywhere.
// `counted`: the chart started inside the element of a repetition counted from kUnknownCount; leaving it is what
// leaving the context means, and `follow` is what can come after the repetition.
struct WalkContext {
    uint32_t rule;
    ByteSet follow;
    bool counted = false;
};

// `candidates`: sorted-order indices, ascending. With a `context`, a token refused after the rule could have ended,
// where the next byte is one that can follow the rule, is kUncertain (the real context might take the rest), not
// kRefused. Calls `verdict` for every accepted and uncertain candidate; the chart is left as it was found.
// `keep` (optional) is asked after each byte a token's bytes take, with the length taken so far: false refuses the
// token there, as if the chart had (and every token under that prefix with it).
using ByteFilter = std::function<bool(size_t length)>;
void walk_tokens(Chart& chart, const TokenVocabulary& vocabulary, const std::vector<uint32_t>& candidates,
                 const std::optional<WalkContext>& context, const std::function<void(uint32_t, TokenVerdict)>& verdict,
                 const ByteFilter& keep = nullptr);

}  // namespace tern::grammar
