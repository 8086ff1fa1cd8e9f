// Pre-tokenization for byte-level BPE: the regex lists llama.cpp selects by `tokenizer.ggml.pre`, applied in sequence.
// Each regex splits every piece the previous one produced; both the matches and the unmatched gaps between them
// become pieces (llama.cpp's unicode_regex_split).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/regex.h"

namespace tern {

// What a `tokenizer.ggml.pre` name implies besides its regexes.
struct PreTokenizerInfo {
    std::string_view name;
    int regex_set = 0;          // index into the regex lists in pre_tokenizer.cc
    bool clean_spaces = true;   // decode() tidies " ." " 's" and the like
    bool ignore_merges = false; // a whole word that is a token is taken as is, before any merge
    bool add_bos = false;       // the default for tokenizer.ggml.add_bos_token
};

// nullptr for an unknown name.
const PreTokenizerInfo* find_pre_tokenizer(std::string_view name);
// The supported names, comma-separated, for error messages.
std::string supported_pre_tokenizers();

class PreTokenizer {
public:
    static Result<PreTokenizer> create(std::string_view name);

    // Splits `text` into words. Each word is the UTF-8 of its code points as llama.cpp decodes them: a byte that
    // is not part of a well-formed sequence became U+FFFD.
    std::vector<std::string> split(std::string_view text) const;

    const PreTokenizerInfo& info() const { return *info_; }

private:
    PreTokenizer(const PreTokenizerInfo* info, std::vector<Regex> regexes)
        : info_(info), regexes_(std::move(regexes)) {}

    const PreTokenizerInfo* info_;
    std::vector<Regex> regexes_;
};

}  // namespace tern
