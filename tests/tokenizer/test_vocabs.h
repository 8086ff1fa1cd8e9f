// Small in-memory vocabularies whose tokenizations can be worked out by hand.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace tern::testing {

// SentencePiece-style: <unk>, <s>, </s>, 256 byte tokens, then pieces whose scores make " hello world" merge
// into "▁hello" and "▁world" (worked through in tokenizer_test.cc), plus a user-defined "<tool>".
inline VocabData make_spm_vocab() {
    VocabData vocab;
    vocab.kind = VocabKind::kSpm;
    auto add = [&](std::string text, float score, TokenType type) {
        vocab.tokens.push_back(std::move(text));
        vocab.scores.push_back(score);
        vocab.token_types.push_back(type);
    };
    add("<unk>", 0, TokenType::kUnknown);
    add("<s>", 0, TokenType::kControl);
    add("</s>", 0, TokenType::kControl);
    for (int byte = 0; byte < 256; ++byte) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", byte);
        add(name, 0, TokenType::kByte);
    }
    const std::vector<std::pair<std::string, float>> pieces = {
        {"\u2581", -1}, {"h", -2}, {"e", -2}, {"l", -2}, {"o", -2}, {"w", -2}, {"r", -2}, {"d", -2},
        {"ll", -3}, {"he", -3.5}, {"hell", -4}, {"hello", -4.5}, {"\u2581hello", -5}, {"\u2581w", -5.5},
        {"or", -6}, {"ld", -6.5}, {"\u2581wor", -7}, {"\u2581world", -7.5}, {"\u00e9", -8},
    };
    for (const auto& [text, score] : pieces) add(text, score, TokenType::kNormal);
    add("<tool>", 0, TokenType::kUserDefined);
    vocab.bos_id = 1;
    vocab.eos_id = 2;
    vocab.unk_id = 0;
    vocab.add_bos = true;
    vocab.add_space_prefix = true;
    return vocab;
}

// Byte-level BPE: the 256 byte stand-ins (id = byte value), merges that build "hello" and "Ġworld", an
// unmerged "Ġxyz", and control / user-defined specials.
inline VocabData make_bpe_vocab(const std::string& pre) {
    VocabData vocab;
    vocab.kind = VocabKind::kBpe;
    vocab.pre = pre;
    for (int byte = 0; byte < 256; ++byte) vocab.tokens.push_back(unicode::byte_to_unicode(static_cast<uint8_t>(byte)));
    vocab.merges = {"h e", "l l", "Ġ t", "Ġt he", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld"};
    for (const std::string& merge : vocab.merges) {
        const size_t space = merge.find(' ');
        vocab.tokens.push_back(merge.substr(0, space) + merge.substr(space + 1));
    }
    vocab.tokens.push_back("Ġxyz");
    vocab.token_types.assign(vocab.tokens.size(), TokenType::kNormal);
    for (const char* special : {"<|endoftext|>", "<|im_end|>"}) {
        vocab.tokens.push_back(special);
        vocab.token_types.push_back(TokenType::kControl);
    }
    vocab.tokens.push_back("<tool>");
    vocab.token_types.push_back(TokenType::kUserDefined);
    vocab.bos_id = static_cast<int32_t>(vocab.tokens.size()) - 3;
    vocab.eos_id = vocab.bos_id;
    return vocab;
}

}  // namespace tern::testing
