// The vocabulary as plain data, and reading it from GGUF metadata (the `tokenizer.ggml.*` keys).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace tern {

class GgufFile;

inline constexpr int32_t kNoToken = -1;

// `tokenizer.ggml.token_type` values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
    kUndefined = 0,
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6,
};

enum class VocabKind {
    kSpm,  // tokenizer.ggml.model "llama": SentencePiece-style merges by score with byte fallback
    kBpe,  // tokenizer.ggml.model "gpt2": byte-level BPE with merges by rank
};

// Everything a Tokenizer needs, with defaults already resolved. Build it by hand for tests or with vocab_from_gguf.
struct VocabData {
    VocabKind kind = VocabKind::kSpm;
    std::string pre = "default";           // BPE pre-tokenizer name; unused for SPM
    std::vector<std::string> tokens;
    std::vector<float> scores;             // per token, or empty for all zero
    std::vector<TokenType> token_types;    // per token, or empty for all normal
    std::vector<std::string> merges;       // BPE: "left right", best first
    int32_t bos_id = kNoToken;
    int32_t eos_id = kNoToken;
    int32_t unk_id = kNoToken;
    int32_t pad_id = kNoToken;
    int32_t eot_id = kNoToken;             // kNoToken: found by text, as llama.cpp does
    int32_t eom_id = kNoToken;
    // Fill-in-the-middle markers (tokenizer.ggml.fim_{pre,suf,mid}_token_id); kNoToken: found by text.
    int32_t fim_pre_id = kNoToken;
    int32_t fim_suf_id = kNoToken;
    int32_t fim_mid_id = kNoToken;
    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = false;
};

// Reads the vocabulary with llama.cpp's defaults: SPM gets BOS 1, EOS 2, UNK 0, add_bos and a space prefix;
// BPE gets BOS = EOS = 11 and add_bos only for Llama-3-style pre-tokenizers. Keys present in the file override
// these; an id outside the vocabulary is ignored with a warning. Fails on a missing or mistyped token list,
// score, type or merge array, an unknown model or pre-tokenizer, or add_bos/add_eos without the token.
Result<VocabData> vocab_from_gguf(const GgufFile& gguf);

}  // namespace tern
