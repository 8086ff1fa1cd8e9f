#include "tokenizer/bpe.h"

#include <optional>

#include "tokenizer/symbol_merge.h"

namespace tern {
namespace {

// A symbol that is no token falls back to its single bytes; llama.cpp keeps only those that are tokens.
void emit(const TokenTable& table, std::string_view piece, std::vector<int32_t>& out) {
    const int32_t token = table.find(piece);
    if (token != kNoToken) {
        out.push_back(token);
        return;
    }
    for (size_t i = 0; i < piece.size(); ++i) {
        const int32_t byte_token = table.find(piece.substr(i, 1));
        if (byte_token != kNoToken) out.push_back(byte_token);
    }
}

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
    std::vector<MergeSymbol> symbols;
    if (ignore_merges && table.find(word) != kNoToken) {
        symbols.push_back({-1, -1, 0, word.size()});
    } else {
        symbols = split_utf8_characters(word);
    }
    std::string scratch;  // one allocation per word, not per lookup
    // The lowest merge rank goes first: its key is -rank.
    merge_symbols<int32_t>(symbols, [&](const MergeSymbol& a, const MergeSymbol& b) -> std::optional<int32_t> {
        const int32_t rank = merges.rank(word.substr(a.begin, a.length), word.substr(b.begin, b.length), scratch);
        if (rank < 0) return std::nullopt;
        return -rank;
    });
    for (const MergeSymbol& symbol : symbols) {
        if (symbol.length > 0) emit(table, word.substr(symbol.begin, symbol.length), out);
    }
}

}  // namespace tern
