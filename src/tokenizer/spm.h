// SentencePiece-style encoding (llama.cpp's llm_tokenizer_spm): start from UTF-8 characters, repeatedly merge the
// adjacent pair whose concatenation is the highest-scoring token, and spell leftovers as <0xNN> byte tokens.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/token_table.h"

namespace tern {

// Appends the ids of `text`, whose spaces the caller has already replaced by U+2581.
void spm_encode(const TokenTable& table, std::string_view text, std::vector<int32_t>& out);

// The token for one raw byte: <0xNN>, else the byte itself as a token, else the unknown token (or kNoToken).
int32_t spm_byte_token(const TokenTable& table, uint8_t byte);

}  // namespace tern
