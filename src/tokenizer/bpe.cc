#include "tokenizer/bpe.h"

#include <queue>

#include "tokenizer/unicode.h"

namespace tern {
namespace {

struct Symbol {
    int32_t prev;
    int32_t next;
    size_t begin;
    size_t length;  // 0 once merged into its left neighbour
};

struct Bigram {
    int32_t left;
    int32_t right;
    int32_t rank;
    size_t length;  // left + right when queued; symbols only grow, so a different sum means a stale pair
};

// Lowest rank first; among equal ranks, the leftmost pair.
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

class BpeSession {
public:
    BpeSession(const TokenTable& table, const BpeMerges& merges, std::string_view word)
        : table_(table), merges_(merges), word_(word) {}

    void run(bool ignore_merges, std::vector<int32_t>& out) {
        if (ignore_merges && table_.find(word_) != kNoToken) {
            symbols_.push_back({-1, -1, 0, word_.size()});
        } else {
            split_characters();
        }
        for (size_t i = 1; i < symbols_.size(); ++i) try_queue(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
        while (!queue_.empty()) {
            const Bigram bigram = queue_.top();
            queue_.pop();
            Symbol& left = symbols_[bigram.left];
            Symbol& right = symbols_[bigram.right];
            if (left.length == 0 || right.length == 0 || left.length + right.length != bigram.length) continue;
            left.length += right.length;
            right.length = 0;
            left.next = right.next;
            if (right.next >= 0) symbols_[right.next].prev = bigram.left;
            try_queue(left.prev, bigram.left);
            try_queue(bigram.left, left.next);
        }
        for (const Symbol& symbol : symbols_) {
            if (symbol.length > 0) emit(word_.substr(symbol.begin, symbol.length), out);
        }
    }

private:
    void split_characters() {
        size_t offset = 0;
        while (offset < word_.size()) {
            const size_t length =
                std::min(unicode::utf8_sequence_length(static_cast<uint8_t>(word_[offset])), word_.size() - offset);
            const auto index = static_cast<int32_t>(symbols_.size());
            const bool last = offset + length == word_.size();
            symbols_.push_back({index - 1, last ? -1 : index + 1, offset, length});
            offset += length;
        }
    }

    void try_queue(int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const Symbol& a = symbols_[left];
        const Symbol& b = symbols_[right];
        const int32_t rank = merges_.rank(word_.substr(a.begin, a.length), word_.substr(b.begin, b.length), scratch_);
        if (rank < 0) return;
        queue_.push({left, right, rank, a.length + b.length});
    }

    // A symbol that is no token falls back to its single bytes; llama.cpp keeps only those that are tokens.
    void emit(std::string_view piece, std::vector<int32_t>& out) const {
        const int32_t token = table_.find(piece);
        if (token != kNoToken) {
            out.push_back(token);
            return;
        }
        for (size_t i = 0; i < piece.size(); ++i) {
            const int32_t byte_token = table_.find(piece.substr(i, 1));
            if (byte_token != kNoToken) out.push_back(byte_token);
        }
    }

    const TokenTable& table_;
    const BpeMerges& merges_;
    std::string_view word_;
    std::vector<Symbol> symbols_;
    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
    std::string scratch_;
};

}  // namespace

BpeMerges::BpeMerges(std::vector<std::string> merges) : merges_(std::move(merges)), index_(merges_.size()) {
    for (size_t i = 0; i < merges_.size(); ++i) {
        // As llama.cpp: the separator is the first space after the first character; a merge without one is void.
        const std::string& merge = merges_[i];
        if (merge.size() < 2 || merge.find(' ', 1) == std::string::npos) continue;
        index_.insert(merges_, static_cast<int32_t>(i));
    }
}

int32_t BpeMerges::rank(std::string_view left, std::string_view right, std::string& scratch) const {
    scratch.assign(left);
    scratch.push_back(' ');
    scratch.append(right);
    return index_.find(merges_, scratch);
}

void bpe_encode_word(const TokenTable& table, const BpeMerges& merges, std::string_view word, bool ignore_merges,
                     std::vector<int32_t>& out) {
    BpeSession(table, merges, word).run(ignore_merges, out);
}

}  // namespace tern
