// Small helpers shared by the tokenizer readers (internal to convert/).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "convert/hf_vocab.h"
#include "tokenizer/vocab.h"

namespace tern::vocab_util {

inline constexpr std::string_view kWordMarker = "\xe2\x96\x81";  // U+2581, SentencePiece's space

// The member `key` of `object`, or nullptr when `object` is no object or the member is absent or null.
inline const nlohmann::json* member(const nlohmann::json& object, std::string_view key) {
    if (!object.is_object()) return nullptr;
    const auto found = object.find(key);
    return found == object.end() || found->is_null() ? nullptr : &*found;
}

inline std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    size_t start = 0;
    for (size_t pos = text.find(from); pos != std::string_view::npos; pos = text.find(from, start)) {
        out.append(text.substr(start, pos - start)).append(to);
        start = pos + from.size();
    }
    return out.append(text.substr(start));
}

// Stores an added token at `id` as llama.cpp's converter does: control when marked special or when it looks
// special, else user-defined with SentencePiece spaces made plain (llama.cpp expects them pre-normalised).
inline void set_added_token(GgufVocab* vocab, size_t id, std::string text, bool special) {
    if (special || looks_like_special_token(text)) {
        vocab->token_types[id] = static_cast<int32_t>(TokenType::kControl);
    } else {
        text = replace_all(text, kWordMarker, " ");
        vocab->token_types[id] = static_cast<int32_t>(TokenType::kUserDefined);
    }
    vocab->tokens[id] = std::move(text);
    if (!vocab->scores.empty()) vocab->scores[id] = -1000.0f;
}

}  // namespace tern::vocab_util
