#include "tokenizer/spm.h"

#include <queue>

#include <fmt/format.h>

#include "tokenizer/unicode.h"

namespace tern {
namespace {

// A run of the input; merged-away symbols keep length 0. Symbols form a linked list in text order.
struct Symbol {
    int32_t prev;
    int32_t next;
    size_t begin;
    size_t length;
};

struct Bigram {
    int32_t left;
    int32_t right;
    float score;
    size_t length;  // left + right at the time the pair was queued; a mismatch later means the pair is stale
};

// Highest score first; among equal scores, the leftmost pair.
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

class SpmSession {
public:
    SpmSession(const TokenTable& table, std::string_view text) : table_(table), text_(text) {}

    void run(std::vector<int32_t>& out) {
        split_characters();
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
        for (int32_t i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) emit(symbols_[i], out);
    }

private:
    void split_characters() {
        size_t offset = 0;
        while (offset < text_.size()) {
            const size_t length =
                std::min(unicode::utf8_sequence_length(static_cast<uint8_t>(text_[offset])), text_.size() - offset);
            const auto index = static_cast<int32_t>(symbols_.size());
            const bool last = offset + length == text_.size();
            symbols_.push_back({index - 1, last ? -1 : index + 1, offset, length});
            offset += length;
        }
    }

    void try_queue(int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const size_t length = symbols_[left].length + symbols_[right].length;
        const int32_t token = table_.find(text_.substr(symbols_[left].begin, length));
        if (token == kNoToken) return;
        queue_.push({left, right, table_.score(token), length});
    }

    // Every merged symbol is a token by construction, so only single characters can need the byte fallback.
    void emit(const Symbol& symbol, std::vector<int32_t>& out) const {
        const std::string_view piece = text_.substr(symbol.begin, symbol.length);
        const int32_t token = table_.find(piece);
        if (token != kNoToken) {
            out.push_back(token);
            return;
        }
        for (char byte : piece) {
            const int32_t byte_token = spm_byte_token(table_, static_cast<uint8_t>(byte));
            if (byte_token != kNoToken) out.push_back(byte_token);
        }
    }

    const TokenTable& table_;
    std::string_view text_;
    std::vector<Symbol> symbols_;
    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

}  // namespace

int32_t spm_byte_token(const TokenTable& table, uint8_t byte) {
    char name[7];
    fmt::format_to_n(name, sizeof(name), "<0x{:02X}>", byte);
    int32_t token = table.find(std::string_view(name, 6));
    if (token == kNoToken) token = table.find(std::string_view(reinterpret_cast<const char*>(&byte), 1));
    return token != kNoToken ? token : table.unk_id();
}

void spm_encode(const TokenTable& table, std::string_view text, std::vector<int32_t>& out) {
    SpmSession(table, text).run(out);
}

}  // namespace tern
