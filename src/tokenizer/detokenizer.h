// Turning ids back into text: each token's piece, llama.cpp's clean-up of spaces for some BPE vocabularies, and a
// streaming detokenizer that only ever hands out complete UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizer/token_table.h"

namespace tern {

class Tokenizer;

// The bytes token `id` stands for, as llama.cpp's token_to_piece with special rendering on: control, unknown and
// user-defined tokens as their text; SPM normal tokens with U+2581 as space; BPE normal tokens through the GPT-2
// byte map; byte tokens <0xNN> as the byte; unused and undefined tokens as nothing.
std::string render_piece(const TokenTable& table, VocabKind kind, int32_t id);

// llama.cpp's clean_spaces pass for BPE vocabularies: drops the space in " ?", " !", " .", " ,", around a lone
// " ' " and before "'s", "'m", "'re", "'ve".
void clean_up_spaces(std::string& text);

// Feeds ids one at a time and returns only whole UTF-8 characters. A character split across tokens (byte-fallback
// or byte-level pieces) is held back until its last byte arrives. Bytes that can never form a character are
// replaced by U+FFFD, so the output is always valid UTF-8. The pieces are concatenated as they are (no leading-
// space removal or space clean-up), as a server streams generated tokens.
class StreamingDetokenizer {
public:
    explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool render_special = false)
        : tokenizer_(tokenizer), render_special_(render_special) {}

    // The text that became complete with this token (possibly empty).
    std::string push(int32_t id);
    // Whatever is still held back, as U+FFFD; the detokenizer is then empty.
    std::string flush();
    void reset() { pending_.clear(); }
    // Bytes held back waiting for the rest of a character.
    size_t pending_bytes() const { return pending_.size(); }

private:
    const Tokenizer& tokenizer_;
    bool render_special_;
    std::string pending_;
};

}  // namespace tern
