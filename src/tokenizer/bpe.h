// Byte-level BPE encoding of pre-tokenized words (llama.cpp's llm_tokenizer_bpe_session): start from the
// characters of the byte-encoded word and repeatedly apply the best-ranked merge.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/string_index.h"
#include "tokenizer/token_table.h"

namespace tern {

class BpeMerges {
public:
    // `merges` are "left right" strings, best first; a repeated pair keeps its first rank.
    explicit BpeMerges(std::vector<std::string> merges);

    // The rank of merging `left` with `right`, or -1. `scratch` avoids an allocation per lookup.
    int32_t rank(std::string_view left, std::string_view right, std::string& scratch) const;

private:
    std::vector<std::string> merges_;  // the rank is the position
    StringIndex index_;
};

// Appends the ids of one word, already byte-encoded (every byte as its GPT-2 stand-in character). With
// `ignore_merges`, a word that is itself a token becomes that token directly.
void bpe_encode_word(const TokenTable& table, const BpeMerges& merges, std::string_view word, bool ignore_merges,
                     std::vector<int32_t>& out);

}  // namespace tern
