// Sets of Unicode code points as sequences of byte sets: how a character class over code points becomes something
// the byte-level matcher runs. [\u00e0-\u00ff] is one two-byte sequence [\xC3][\xA0-\xBF]; a class that spans
// encoding lengths splits into several sequences (as RE2 and Rust's regex-syntax do).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar.h"

namespace tern::grammar {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;
using CodePointRanges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive, any order, may overlap

// Sorted, merged, surrogates removed.
CodePointRanges normalize(CodePointRanges ranges);
// Every code point not in `ranges` (surrogates excluded).
CodePointRanges complement(const CodePointRanges& ranges);
// The byte sequences that spell exactly the code points of `ranges` in UTF-8; the one-byte ones come first, merged
// into a single set.
std::vector<Sequence> utf8_sequences(const CodePointRanges& ranges);
// The code point as UTF-8.
std::string encode_utf8(uint32_t code_point);
// Decodes one code point at `text[pos]` and advances `pos`; false for invalid UTF-8.
bool decode_utf8(std::string_view text, size_t& pos, uint32_t& code_point);

}  // namespace tern::grammar
