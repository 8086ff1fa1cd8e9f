// The grammar's view of a tokenizer: each id's bytes as they appear in the output text. Control tokens (BOS, EOS,
// chat markers) have none, so a grammar never allows them; ids past the tokenizer's table (a model's padded
// vocabulary) have none either.
#pragma once

#include <cstdint>
#include <memory>

#include "grammar/token_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace tern::grammar {

std::shared_ptr<const TokenVocabulary> vocabulary_of(const Tokenizer& tokenizer, int64_t model_vocab_size);

}  // namespace tern::grammar
