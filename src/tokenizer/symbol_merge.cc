#include "tokenizer/symbol_merge.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace tern {

std::vector<MergeSymbol> split_utf8_characters(std::string_view text) {
    std::vector<MergeSymbol> symbols;
    size_t offset = 0;
    while (offset < text.size()) {
        const size_t length =
            std::min(unicode::utf8_sequence_length(static_cast<uint8_t>(text[offset])), text.size() - offset);
        const auto index = static_cast<int32_t>(symbols.size());
        const bool last = offset + length == text.size();
        symbols.push_back({index - 1, last ? -1 : index + 1, offset, length});
        offset += length;
    }
    return symbols;
}

}  // namespace tern
