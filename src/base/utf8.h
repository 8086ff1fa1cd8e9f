// Strict UTF-8 validation, one sequence at a time: what the detokenizer needs to replace broken bytes and what error
// messages need to quote file text safely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tern {

enum class Utf8Status { kValid, kInvalid, kIncomplete };

struct Utf8Step {
    Utf8Status status = Utf8Status::kInvalid;
    // kValid: the sequence length. kInvalid: how many bytes one U+FFFD replaces (the maximal subpart, at least 1).
    // kIncomplete: the bytes present, a valid start of a sequence that the input ends inside.
    size_t length = 1;
};

// One step of strict UTF-8 validation at the start of `bytes` (which must not be empty): overlong forms, surrogates
// and values past U+10FFFF are invalid.
Utf8Step next_utf8_sequence(std::string_view bytes);

// Appends the code point's UTF-8 spelling; a surrogate or a value past U+10FFFF, which have none, becomes U+FFFD.
void append_utf8(std::string& out, uint32_t code_point);

}  // namespace tern
