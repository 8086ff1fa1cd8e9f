// Text <-> token ids for a GGUF vocabulary, matching llama.cpp's llama_tokenize / llama_detokenize.
// A Tokenizer is immutable after creation and safe to use from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/token_table.h"
#include "tokenizer/vocab.h"

namespace tern {

class GgufFile;

class Tokenizer {
public:
    static Result<std::unique_ptr<Tokenizer>> from_gguf(const GgufFile& gguf);
    static Result<std::unique_ptr<Tokenizer>> create(VocabData data);

    // `add_special` adds BOS/EOS as the vocabulary asks; `parse_special` turns control-token text (e.g.
    // "<|im_end|>") into those tokens. User-defined tokens are recognised either way.
    std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

    // llama_detokenize: `remove_special` drops a leading BOS and trailing EOS the vocabulary adds; with a space
    // prefix the first piece loses one leading space unless it follows a BOS; `render_special` writes control
    // tokens as their text. Ids outside the vocabulary contribute nothing.
    std::string decode(std::span<const int32_t> ids, bool remove_special = false, bool render_special = false) const;

    // The bytes of one token (may be part of a UTF-8 character). Control and unknown tokens are empty unless
    // `render_special`; an id outside the vocabulary is empty.
    const std::string& token_to_piece(int32_t id, bool render_special = false) const;

    VocabKind kind() const { return kind_; }
    const std::string& pre() const { return pre_; }
    int32_t vocab_size() const { return table_.size(); }
    // The token's text as stored in the vocabulary; the id must be in range.
    const std::string& token_text(int32_t id) const { return table_.text(id); }
    uint32_t token_attrs(int32_t id) const { return table_.contains(id) ? table_.attrs(id) : 0; }
    bool is_control(int32_t id) const { return table_.contains(id) && table_.has_attr(id, kAttrControl); }
    std::optional<int32_t> find_token(std::string_view text) const;

    int32_t bos_id() const { return table_.bos_id(); }
    int32_t eos_id() const { return table_.eos_id(); }
    int32_t eot_id() const { return table_.eot_id(); }
    int32_t eom_id() const { return table_.eom_id(); }
    int32_t unk_id() const { return table_.unk_id(); }
    int32_t pad_id() const { return table_.pad_id(); }
    int32_t fim_pre_id() const { return table_.fim_pre_id(); }  // kNoToken (-1) when the vocabulary has none
    int32_t fim_suf_id() const { return table_.fim_suf_id(); }
    int32_t fim_mid_id() const { return table_.fim_mid_id(); }
    bool add_bos() const { return add_bos_; }
    bool add_eos() const { return add_eos_; }
    bool add_space_prefix() const { return add_space_prefix_; }
    // Whether decode() tidies spaces around punctuation (some BPE vocabularies, as llama.cpp).
    bool clean_spaces() const { return clean_spaces_; }
    bool is_end_of_generation(int32_t id) const { return table_.is_end_of_generation(id); }
    const std::vector<int32_t>& end_of_generation_ids() const { return table_.end_of_generation_ids(); }

private:
    Tokenizer(VocabKind kind, TokenTable table) : kind_(kind), table_(std::move(table)) {}

    void encode_spm(std::string_view text, bool add_special, bool parse_special, std::vector<int32_t>& out) const;
    void encode_bpe(std::string_view text, bool add_special, bool parse_special, std::vector<int32_t>& out) const;

    VocabKind kind_;
    std::string pre_;
    TokenTable table_;
    std::optional<PreTokenizer> pre_tokenizer_;  // BPE only
    std::unique_ptr<BpeMerges> merges_;          // BPE only
    std::vector<std::string> pieces_;            // token_to_piece with special rendering, per id
    bool add_bos_ = false;
    bool add_eos_ = false;
    bool add_space_prefix_ = false;
    bool clean_spaces_ = false;
    bool ignore_merges_ = false;
};

}  // namespace tern
