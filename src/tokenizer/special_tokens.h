// Splitting input text around special-token strings before the model's tokenizer sees it (llama.cpp's
// tokenizer_st_partition). User-defined tokens are always matched; control and unknown tokens only when
// `parse_special` is set. Longer tokens are matched first, across the whole text.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/token_table.h"

namespace tern {

struct TextFragment {
    int32_t token = kNoToken;  // a matched special token, or kNoToken for plain text
    std::string_view text;     // the plain text (a view into the input) when token is kNoToken
};

std::vector<TextFragment> partition_special(const TokenTable& table, std::string_view text, bool parse_special);

}  // namespace tern
