// One choice's generated text with vLLM's min_tokens rule for stop strings: they are looked for only in the text of
// the tokens after the first min_tokens (vLLM's stop_check_offset), so a stop string cannot end a request that
// min_tokens keeps going. serving::TextStream does the rest (whole UTF-8 characters, stop strings cut exactly).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serving/text_stream.h"
#include "tokenizer/detokenizer.h"

namespace tern::server {

// Not thread-safe: one choice's outputs arrive on one thread at a time.
class ChoiceText {
public:
    // `render_special`: control tokens come out as their text (for a tool-call marker that is one).
    ChoiceText(const Tokenizer& tokenizer, std::vector<std::string> stop_strings, int min_tokens,
               bool render_special = false);

    // The text that may be sent after this token (possibly empty).
    std::string push(int32_t token);
    // Whatever is still held back, at the end of generation.
    std::string finish();
    // A stop string matched after the first min_tokens tokens: generation should end with finish_reason "stop".
    bool stopped() const { return !in_early_ && text_.stopped(); }

private:
    // The first min_tokens tokens go through a plain detokenizer; the switch waits for a whole character, so that
    // no character is split between the two. A stop string spanning the switch is not seen (vLLM sees it when it
    // ends after the offset: a difference of a few characters at most).
    StreamingDetokenizer early_;
    serving::TextStream text_;
    int num_early_left_;
    bool in_early_;
};

}  // namespace tern::server
