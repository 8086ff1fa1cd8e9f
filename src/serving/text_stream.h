// One choice's generated tokens as the text a client receives: whole UTF-8 characters only (a character split across
// byte tokens is held back until complete; bytes that can never form one become U+FFFD), and stop strings cut the
// text exactly before the match (OpenAI's `stop`: the stop string itself is not returned). Text that might be the
// start of a stop string is held back until it is known not to be.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tern::serving {

class TextStream {
public:
    // `render_special`: control tokens come out as their text (a tool-call marker such as [TOOL_CALLS] is one).
    TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop_strings, bool render_special = false);

    // The text that may be sent after this token (possibly empty). After a stop string matched, always empty.
    std::string push(int32_t token);
    // At the end of generation: whatever is still held back (unless a stop string matched).
    std::string finish();
    // A stop string matched: generation should end with finish_reason "stop".
    bool stopped() const { return stopped_; }
    const std::string& emitted() const { return emitted_; }

private:
    std::string advance(bool final);
    std::string release(size_t length);
    size_t held_suffix_length() const;

    StreamingDetokenizer detokenizer_;
    std::vector<std::string> stop_strings_;
    std::string pending_;  // decoded text not yet released
    std::string emitted_;
    bool stopped_ = false;
};

}  // namespace tern::serving
