// A Hugging Face folder's tokenizer as GGUF `tokenizer.ggml.*` metadata, as llama.cpp's converter writes it and
// tokenizer/vocab.cc reads it: a SentencePiece tokenizer.model becomes model "llama" (tokens, scores, types); a
// byte-level BPE tokenizer.json (GPT-2, Qwen2, Llama 3) becomes model "gpt2" (tokens, types, merges and the
// pre-tokenizer's name). Special ids, add_bos/add_eos and the chat template come from tokenizer_config.json and
// config.json.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "convert/hf_config.h"
#include "formats/gguf_writer.h"

namespace tern {

struct GgufVocab {
    std::string model;                // "llama" (SentencePiece) or "gpt2" (byte-level BPE)
    std::string pre = "default";      // BPE pre-tokenizer name ("qwen2", "llama-bpe", "gpt-2")
    std::vector<std::string> tokens;  // exactly the model's vocab_size; ids no tokenizer file names are "[PADi]"
    std::vector<float> scores;        // "llama" only
    std::vector<int32_t> token_types; // tokenizer/vocab.h TokenType values
    std::vector<std::string> merges;  // "gpt2" only: "left right", best first
    std::optional<int32_t> bos_id;
    std::optional<int32_t> eos_id;
    std::optional<int32_t> unk_id;
    std::optional<int32_t> pad_id;
    std::optional<bool> add_bos;
    std::optional<bool> add_eos;
    // SentencePiece: whether a space is put before the text (readers' default: yes). Gemma's tokenizers do not,
    // which llama.cpp's converter writes as false.
    std::optional<bool> add_space_prefix;
    std::string chat_template;        // empty: none
    std::vector<std::pair<std::string, std::string>> named_chat_templates;  // tokenizer.chat_template.NAME
};

// Reads HF_DIR/tokenizer.model when present, else HF_DIR/tokenizer.json, then the special tokens and chat
// template. A missing tokenizer, a tokenizer file tern cannot read, or more tokens than config.vocab_size is an
// error naming the file.
Result<GgufVocab> read_hf_vocab(const std::string& hf_dir, const HfConfig& config);

// The two tokenizer files on their own: the SentencePiece model's own special ids are kept; add_* flags and
// templates are left unset.
Result<GgufVocab> read_spm_vocab(const std::string& model_path, int64_t vocab_size);
Result<GgufVocab> read_bpe_vocab(const nlohmann::json& tokenizer, const std::string& label, const HfConfig& config);

// Whether an added token not marked special still reads as a control token ("<|...|>", "<pad>", "<mask>", ...):
// llama.cpp's converter makes those control tokens, and user-defined otherwise.
bool looks_like_special_token(std::string_view text);

// Writes the tokenizer.ggml.* keys (and tokenizer.chat_template).
void write_vocab_metadata(const GgufVocab& vocab, GgufWriter* writer);

}  // namespace tern
