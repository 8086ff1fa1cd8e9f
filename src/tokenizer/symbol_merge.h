// The pair-merge loop that byte-level BPE and SentencePiece share (llama.cpp's llm_tokenizer_*_session): the text
// starts as one symbol per UTF-8 character, and the best adjacent pair is merged until no pair qualifies. The two
// differ only in what makes a pair qualify and rank (a merge rank, a token score) and in how symbols become ids.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

namespace tern {

// A run of the text; symbols form a linked list in text order, and one merged into its left neighbour keeps
// length 0, so the vector's order is the text's order.
struct MergeSymbol {
    int32_t prev;
    int32_t next;
    size_t begin;
    size_t length;
};

// One symbol per UTF-8 character (a truncated sequence at the end is one symbol).
std::vector<MergeSymbol> split_utf8_characters(std::string_view text);

// Merges adjacent symbols greedily. pair_key(left, right) gives a pair's key, higher first, or nullopt when the pair
// cannot merge; among equal keys the leftmost pair goes first.
template <typename Key, typename PairKey>
void merge_symbols(std::vector<MergeSymbol>& symbols, PairKey pair_key) {
    struct Candidate {
        int32_t left;
        int32_t right;
        Key key;
        size_t length;  // left + right when queued; symbols only grow, so a different sum means a stale pair
    };
    struct Order {
        bool operator()(const Candidate& a, const Candidate& b) const {
            return a.key < b.key || (a.key == b.key && a.left > b.left);
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, Order> queue;
    const auto try_queue = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const std::optional<Key> key = pair_key(symbols[left], symbols[right]);
        if (key) queue.push({left, right, *key, symbols[left].length + symbols[right].length});
    };
    for (size_t i = 1; i < symbols.size(); ++i) try_queue(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
    while (!queue.empty()) {
        const Candidate candidate = queue.top();
        queue.pop();
        MergeSymbol& left = symbols[candidate.left];
        MergeSymbol& right = symbols[candidate.right];
        if (left.length == 0 || right.length == 0 || left.length + right.length != candidate.length) continue;
        left.length += right.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = candidate.left;
        try_queue(left.prev, candidate.left);
        try_queue(candidate.left, left.next);
    }
}

}  // namespace tern
