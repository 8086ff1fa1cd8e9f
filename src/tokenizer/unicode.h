// UTF-8 and code point helpers shared by the tokenizers, plus GPT-2's byte <-> printable-character map.
// Decoding follows llama.cpp's lenient rules (not strict UTF-8) so that tokenization matches it byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.h"

namespace tern::unicode {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// The sequence length a lead byte announces, judged from its high nibble only (continuation bytes count as 1).
size_t utf8_sequence_length(uint8_t lead);

// Decodes `text` into code points. A byte that does not start a complete sequence becomes U+FFFD and decoding
// resumes at the next byte. Overlong forms and surrogates are accepted as they are (llama.cpp does the same);
// values above U+10FFFF become U+FFFD.
std::vector<uint32_t> decode_utf8(std::string_view text);

// Appends the UTF-8 form of `cpt` (which must be at most U+10FFFF).
void append_utf8(uint32_t cpt, std::string& out);

// Unicode's White_Space property: the set llama.cpp's splitters treat as \s.
bool is_whitespace(uint32_t cpt);

// GPT-2 byte-level BPE: every byte has a printable stand-in character, returned as UTF-8.
const std::string& byte_to_unicode(uint8_t byte);
// The byte whose stand-in is `cpt`, if any.
std::optional<uint8_t> unicode_to_byte(uint32_t cpt);

// Replaces every byte of `text` with its GPT-2 stand-in.
std::string byte_encode(std::string_view text);

// Strict validation lives in base (error messages use it too).
using tern::next_utf8_sequence;
using tern::Utf8Status;
using tern::Utf8Step;

}  // namespace tern::unicode
