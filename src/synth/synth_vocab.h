// A built-in SentencePiece-style vocabulary of any size for synthetic models: control tokens, 256 byte-fallback
// tokens, printable ASCII with and without the U+2581 word marker, then letter n-grams until the size is reached.
// Any text tokenizes (bytes cover the rest) and decodes back unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "formats/gguf_writer.h"

namespace tern {

struct SynthVocab {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> token_types;  // ggml: 1 normal, 2 unknown, 3 control, 6 byte
};

// Needs at least 512 tokens so that the control, byte and ASCII pieces fit.
Result<SynthVocab> make_synth_vocab(int64_t vocab_size);

// Makes the last tokens of `vocab` control tokens spelled `texts` (an architecture's chat markers).
void replace_last_tokens(SynthVocab* vocab, const std::vector<std::string>& texts);

// Writes the tokenizer.ggml.* keys of `vocab` (model "llama", BOS 1, EOS 2, UNK 0, add BOS).
void add_vocab_metadata(const SynthVocab& vocab, GgufWriter* writer);

}  // namespace tern
