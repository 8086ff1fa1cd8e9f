// The validated vocabulary: token texts, scores and attributes, text -> id lookup, the special-token ids and
// the end-of-generation set, built once from VocabData with llama.cpp's detection rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/string_index.h"
#include "tokenizer/vocab.h"

namespace tern {

// Token attribute bits (llama.cpp's llama_token_attr); a token may carry several.
enum TokenAttr : uint32_t {
    kAttrUnknown = 1u << 0,
    kAttrUnused = 1u << 1,
    kAttrNormal = 1u << 2,
    kAttrControl = 1u << 3,
    kAttrUserDefined = 1u << 4,
    kAttrByte = 1u << 5,
};

class TokenTable {
public:
    // Takes the token texts out of `data`. Fails on a duplicated token, an empty vocabulary, arrays shorter than
    // the token list, or special ids out of range.
    static Result<TokenTable> create(VocabData data);

    int32_t size() const { return static_cast<int32_t>(texts_.size()); }
    bool contains(int32_t id) const { return id >= 0 && id < size(); }
    // kNoToken when no token has exactly this text.
    int32_t find(std::string_view text) const;
    const std::string& text(int32_t id) const { return texts_[id]; }
    float score(int32_t id) const { return scores_.empty() ? 0.0f : scores_[id]; }
    uint32_t attrs(int32_t id) const { return attrs_[id]; }
    bool has_attr(int32_t id, uint32_t attr) const { return (attrs_[id] & attr) != 0; }

    // Control, user-defined and unknown tokens, longest text first: the order special text is searched for.
    const std::vector<int32_t>& special_tokens() const { return special_tokens_; }
    bool is_end_of_generation(int32_t id) const;
    const std::vector<int32_t>& end_of_generation_ids() const { return eog_ids_; }

    int32_t bos_id() const { return bos_id_; }
    int32_t eos_id() const { return eos_id_; }
    int32_t eot_id() const { return eot_id_; }
    int32_t eom_id() const { return eom_id_; }
    int32_t unk_id() const { return unk_id_; }
    int32_t pad_id() const { return pad_id_; }
    // Fill-in-the-middle markers: prefix, suffix, middle (kNoToken when the vocabulary has none).
    int32_t fim_pre_id() const { return fim_pre_id_; }
    int32_t fim_suf_id() const { return fim_suf_id_; }
    int32_t fim_mid_id() const { return fim_mid_id_; }

private:
    TokenTable() = default;
    Status fill_tokens(VocabData& data);
    Status fill_special_ids(const VocabData& data);
    void detect_special_by_text();
    void collect_special_tokens();

    std::vector<std::string> texts_;
    std::vector<float> scores_;
    std::vector<uint32_t> attrs_;
    StringIndex index_;
    std::vector<int32_t> special_tokens_;
    std::vector<int32_t> eog_ids_;
    int32_t bos_id_ = kNoToken;
    int32_t eos_id_ = kNoToken;
    int32_t eot_id_ = kNoToken;
    int32_t eom_id_ = kNoToken;
    int32_t unk_id_ = kNoToken;
    int32_t pad_id_ = kNoToken;
    int32_t fim_pre_id_ = kNoToken;
    int32_t fim_suf_id_ = kNoToken;
    int32_t fim_mid_id_ = kNoToken;
};

}  // namespace tern
