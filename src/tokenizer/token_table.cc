#include "tokenizer/token_table.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "base/printable.h"

namespace tern {
namespace {

uint32_t attr_of(TokenType type) {
    switch (type) {
        case TokenType::kNormal: return kAttrNormal;
        case TokenType::kUnknown: return kAttrUnknown;
        case TokenType::kControl: return kAttrControl;
        case TokenType::kUserDefined: return kAttrUserDefined;
        case TokenType::kUnused: return kAttrUnused;
        case TokenType::kByte: return kAttrByte;
        case TokenType::kUndefined: return 0;
    }
    return 0;
}

// Texts llama.cpp recognises when the file names no such token, in the order tern prefers them (llama.cpp takes
// whichever its hash map yields first). Each detected token is made a control token.
constexpr std::array<std::string_view, 11> kEotTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
};
constexpr std::array<std::string_view, 1> kEomTexts = {"<|eom_id|>"};
// Fill-in-the-middle markers: prefix, suffix, middle, pad, repo, file separator.
constexpr std::array<std::string_view, 8> kFimPreTexts = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>",
    "<|prefix|>",
};
constexpr std::array<std::string_view, 8> kFimSufTexts = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>",
    "<|suffix|>",
};
constexpr std::array<std::string_view, 8> kFimMidTexts = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>",
    "<|middle|>",
};
constexpr std::array<std::string_view, 5> kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::array<std::string_view, 5> kFimRepTexts = {
    "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
};
constexpr std::array<std::string_view, 1> kFimSepTexts = {"<|file_sep|>"};
// Tokens that end generation whatever their id.
constexpr std::array<std::string_view, 17> kEogTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>",
    "<｜end▁of▁sentence｜>",
};

}  // namespace

Result<TokenTable> TokenTable::create(VocabData data) {
    TokenTable table;
    TERN_RETURN_IF_ERROR(table.fill_tokens(data));
    TERN_RETURN_IF_ERROR(table.fill_special_ids(data));
    table.detect_special_by_text();
    table.collect_special_tokens();
    return table;
}

Status TokenTable::fill_tokens(VocabData& data) {
    const size_t count = data.tokens.size();
    if (count == 0) return invalid_argument("the vocabulary has no tokens");
    if (count > static_cast<size_t>(INT32_MAX / 2)) return invalid_argument("the vocabulary has too many tokens");
    if (!data.scores.empty() && data.scores.size() < count) {
        return invalid_argument(fmt::format("{} scores for {} tokens", data.scores.size(), count));
    }
    if (!data.token_types.empty() && data.token_types.size() < count) {
        return invalid_argument(fmt::format("{} token types for {} tokens", data.token_types.size(), count));
    }
    texts_ = std::move(data.tokens);
    if (!data.scores.empty()) scores_.assign(data.scores.begin(), data.scores.begin() + count);
    attrs_.reserve(count);
    index_ = StringIndex(count);
    for (size_t i = 0; i < count; ++i) {
        // llama.cpp names empty tokens so that every token stays addressable by its text.
        if (texts_[i].empty()) texts_[i] = fmt::format("[EMPTY_{}]", i);
        const auto id = static_cast<int32_t>(i);
        const int32_t existing = index_.insert(texts_, id);
        if (existing != id) {
            return invalid_argument(
                fmt::format("duplicate token '{}' with ids {} and {}", printable(texts_[i]), existing, i));
        }
        attrs_.push_back(data.token_types.empty() ? kAttrNormal : attr_of(data.token_types[i]));
    }
    return Status::ok();
}

Status TokenTable::fill_special_ids(const VocabData& data) {
    const std::array<std::pair<std::string_view, std::pair<int32_t, int32_t*>>, 9> ids = {{
        {"BOS", {data.bos_id, &bos_id_}},
        {"EOS", {data.eos_id, &eos_id_}},
        {"EOT", {data.eot_id, &eot_id_}},
        {"EOM", {data.eom_id, &eom_id_}},
        {"UNK", {data.unk_id, &unk_id_}},
        {"PAD", {data.pad_id, &pad_id_}},
        {"FIM prefix", {data.fim_pre_id, &fim_pre_id_}},
        {"FIM suffix", {data.fim_suf_id, &fim_suf_id_}},
        {"FIM middle", {data.fim_mid_id, &fim_mid_id_}},
    }};
    for (const auto& [name, value] : ids) {
        const auto [id, target] = value;
        if (id != kNoToken && !contains(id)) {
            return invalid_argument(fmt::format("{} id {} is outside the vocabulary of {}", name, id, size()));
        }
        *target = id;
    }
    if (data.add_bos && bos_id_ == kNoToken) return invalid_argument("add_bos is set but there is no BOS token");
    if (data.add_eos && eos_id_ == kNoToken) return invalid_argument("add_eos is set but there is no EOS token");
    return Status::ok();
}

void TokenTable::detect_special_by_text() {
    auto make_control = [&](int32_t id) { attrs_[id] |= kAttrControl; };
    auto detect = [&](const auto& texts) {
        for (std::string_view text : texts) {
            const int32_t id = find(text);
            if (id != kNoToken) {
                make_control(id);
                return id;
            }
        }
        return kNoToken;
    };
    if (eot_id_ == kNoToken) eot_id_ = detect(kEotTexts);
    if (eom_id_ == kNoToken) eom_id_ = detect(kEomTexts);
    // Detected by text even when the file names them, so that they are control tokens either way.
    const int32_t fim_pre = detect(kFimPreTexts);
    const int32_t fim_suf = detect(kFimSufTexts);
    const int32_t fim_mid = detect(kFimMidTexts);
    if (fim_pre_id_ == kNoToken) fim_pre_id_ = fim_pre;
    if (fim_suf_id_ == kNoToken) fim_suf_id_ = fim_suf;
    if (fim_mid_id_ == kNoToken) fim_mid_id_ = fim_mid;
    for (int32_t id : {detect(kFimPadTexts), detect(kFimRepTexts), detect(kFimSepTexts)}) {
        if (id != kNoToken) eog_ids_.push_back(id);
    }
    for (std::string_view text : kEogTexts) {
        const int32_t id = find(text);
        if (id == kNoToken) continue;
        make_control(id);
        eog_ids_.push_back(id);
    }
    for (int32_t id : {eos_id_, eot_id_, eom_id_}) {
        if (id != kNoToken) eog_ids_.push_back(id);
    }
    std::sort(eog_ids_.begin(), eog_ids_.end());
    eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

void TokenTable::collect_special_tokens() {
    for (int32_t id = 0; id < size(); ++id) {
        if (has_attr(id, kAttrControl | kAttrUserDefined | kAttrUnknown)) special_tokens_.push_back(id);
    }
    std::stable_sort(special_tokens_.begin(), special_tokens_.end(),
                     [&](int32_t a, int32_t b) { return texts_[a].size() > texts_[b].size(); });
}

int32_t TokenTable::find(std::string_view text) const {
    const int32_t id = index_.find(texts_, text);
    return id < 0 ? kNoToken : id;
}

bool TokenTable::is_end_of_generation(int32_t id) const {
    return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

}  // namespace tern
