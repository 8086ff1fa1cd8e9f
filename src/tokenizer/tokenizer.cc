#include "tokenizer/tokenizer.h"

#include "tokenizer/detokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"

namespace tern {
namespace {

const std::string kEmpty;

// SentencePiece's view of `text`: an optional leading space, and every space as U+2581.
std::string escape_spaces(std::string_view text, bool space_prefix) {
    std::string result;
    result.reserve(text.size() + text.size() / 2 + 3);
    if (space_prefix) result += "\xE2\x96\x81";
    for (char c : text) {
        if (c == ' ') {
            result += "\xE2\x96\x81";  // U+2581
        } else {
            result.push_back(c);
        }
    }
    return result;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GgufFile& gguf) {
    TERN_ASSIGN_OR_RETURN(VocabData data, vocab_from_gguf(gguf));
    return create(std::move(data));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::create(VocabData data) {
    const VocabKind kind = data.kind;
    const bool add_bos = data.add_bos;
    const bool add_eos = data.add_eos;
    const bool add_space_prefix = data.add_space_prefix;
    std::string pre = std::move(data.pre);
    std::vector<std::string> merges = std::move(data.merges);
    TERN_ASSIGN_OR_RETURN(TokenTable table, TokenTable::create(std::move(data)));

    std::unique_ptr<Tokenizer> tokenizer(new Tokenizer(kind, std::move(table)));
    tokenizer->add_bos_ = add_bos;
    tokenizer->add_eos_ = add_eos;
    tokenizer->add_space_prefix_ = add_space_prefix;
    if (kind == VocabKind::kBpe) {
        TERN_ASSIGN_OR_RETURN(PreTokenizer pre_tokenizer, PreTokenizer::create(pre));
        tokenizer->clean_spaces_ = pre_tokenizer.info().clean_spaces;
        tokenizer->ignore_merges_ = pre_tokenizer.info().ignore_merges;
        tokenizer->pre_tokenizer_.emplace(std::move(pre_tokenizer));
        tokenizer->merges_ = std::make_unique<BpeMerges>(std::move(merges));
        tokenizer->pre_ = std::move(pre);
    }
    const TokenTable& tokens = tokenizer->table_;
    tokenizer->pieces_.reserve(tokens.size());
    for (int32_t id = 0; id < tokens.size(); ++id) tokenizer->pieces_.push_back(render_piece(tokens, kind, id));
    return tokenizer;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 2);
    if (kind_ == VocabKind::kSpm) {
        encode_spm(text, add_special, parse_special, out);
    } else {
        encode_bpe(text, add_special, parse_special, out);
    }
    return out;
}

void Tokenizer::encode_spm(std::string_view text, bool add_special, bool parse_special,
                           std::vector<int32_t>& out) const {
    if (add_special && add_bos_) out.push_back(table_.bos_id());
    // SentencePiece adds its space prefix at the start and, in llama.cpp, again after every special token.
    bool after_special = true;
    for (const TextFragment& fragment : partition_special(table_, text, parse_special)) {
        if (fragment.token != kNoToken) {
            out.push_back(fragment.token);
            after_special = true;
            continue;
        }
        spm_encode(table_, escape_spaces(fragment.text, add_space_prefix_ && after_special), out);
        after_special = false;
    }
    if (add_special && add_eos_) out.push_back(table_.eos_id());
}

void Tokenizer::encode_bpe(std::string_view text, bool add_special, bool parse_special,
                           std::vector<int32_t>& out) const {
    if (add_special && add_bos_) out.push_back(table_.bos_id());
    for (const TextFragment& fragment : partition_special(table_, text, parse_special)) {
        if (fragment.token != kNoToken) {
            out.push_back(fragment.token);
            continue;
        }
        for (const std::string& word : pre_tokenizer_->split(fragment.text)) {
            bpe_encode_word(table_, *merges_, unicode::byte_encode(word), ignore_merges_, out);
        }
    }
    if (add_special && add_eos_) out.push_back(table_.eos_id());
}

const std::string& Tokenizer::token_to_piece(int32_t id, bool render_special) const {
    if (!table_.contains(id)) return kEmpty;
    if (!render_special && table_.has_attr(id, kAttrControl | kAttrUnknown)) return kEmpty;
    return pieces_[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool remove_special, bool render_special) const {
    bool strip_space = add_space_prefix_;
    if (remove_special && add_bos_ && !ids.empty() && ids.front() == table_.bos_id()) {
        strip_space = false;
        ids = ids.subspan(1);
    }
    if (remove_special && add_eos_ && !ids.empty() && ids.back() == table_.eos_id()) ids = ids.first(ids.size() - 1);

    std::string text;
    for (int32_t id : ids) {
        std::string_view piece = token_to_piece(id, render_special);
        // Only the very first token may lose its space, whether or not it rendered anything (as llama.cpp).
        if (strip_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
        strip_space = false;
        text.append(piece);
    }
    if (clean_spaces_) clean_up_spaces(text);
    return text;
}

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
    const int32_t id = table_.find(text);
    return id == kNoToken ? std::nullopt : std::optional<int32_t>(id);
}

}  // namespace tern
