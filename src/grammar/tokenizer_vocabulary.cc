#include "grammar/tokenizer_vocabulary.h"

#include <string>
#include <vector>

namespace tern::grammar {

std::shared_ptr<const TokenVocabulary> vocabulary_of(const Tokenizer& tokenizer, int64_t model_vocab_size) {
    std::vector<std::string> bytes(static_cast<size_t>(model_vocab_size));
    for (int32_t id = 0; id < tokenizer.vocab_size() && id < model_vocab_size; ++id) {
        bytes[static_cast<size_t>(id)] = tokenizer.token_to_piece(id);
    }
    return std::make_shared<const TokenVocabulary>(std::move(bytes));
}

}  // namespace tern::grammar
