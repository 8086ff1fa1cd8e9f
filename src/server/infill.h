// Fill-in-the-middle prompts for OpenAI's `suffix` on /v1/completions: the model's FIM marker tokens and the prompt
// layout llama.cpp's /infill uses. It does not tokenize: callers pass token ids.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tern::server {

struct FimTokens {
    int32_t prefix = -1;  // <PRE>, <|fim_prefix|>, ...
    int32_t suffix = -1;  // <SUF>
    int32_t middle = -1;  // <MID>: the model writes the middle after it
};

// The model's three markers (GGUF tokenizer.ggml.fim_*_token_id, or found by their text); nullopt when any is
// missing, as in vocabularies of models not trained for fill-in-the-middle.
std::optional<FimTokens> fim_tokens(const Tokenizer& tokenizer);

// [bos] <PRE> prefix <SUF> suffix <MID>, llama.cpp's format_infill order (its non-SPM layout, which the code models
// with FIM tokens use); `bos` < 0 adds none.
std::vector<int32_t> infill_prompt(const FimTokens& fim, int32_t bos, std::span<const int32_t> prefix,
                                   std::span<const int32_t> suffix);

}  // namespace tern::server
