// Prompt lookup (n-gram) drafts for speculative decoding, as vLLM's `ngram` method: when the last n tokens of a
// sequence appeared earlier in it, the tokens that followed them then are proposed as what follows now. Outputs that
// copy from their input (code edits, extraction, summaries that quote, repeated structure) get several tokens
// accepted per step at the price of one batched forward; elsewhere nothing is proposed and nothing is lost.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tern::spec {

struct NgramOptions {
    int min_n = 2;          // shortest suffix matched (1 proposes on any repeated token: many wrong drafts)
    int max_n = 4;          // longest suffix tried first
    int num_tokens = 4;     // drafts proposed at most (--num-speculative-tokens)
};

// The tokens after the latest earlier occurrence of the longest suffix of `tokens` (max_n down to min_n tokens) that
// occurred before, at most options.num_tokens of them; empty when no suffix of min_n tokens repeats. O(len x max_n).
std::vector<int32_t> propose_ngram(std::span<const int32_t> tokens, const NgramOptions& options);

}  // namespace tern::spec
