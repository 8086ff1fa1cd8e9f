// tokenizer.json (a Hugging Face fast tokenizer: byte-level BPE as GPT-2, Qwen2 and Llama 3 use it) -> GGUF model
// "gpt2". The pre-tokenizer's split regex tells which of tern's pre-tokenizers reproduces it.
#include <fmt/format.h>

#include "base/log.h"
#include "base/printable.h"
#include "convert/hf_vocab.h"
#include "convert/vocab_util.h"
#include "formats/strict_json.h"

namespace tern {
namespace {

using nlohmann::json;
using vocab_util::member;
using vocab_util::replace_all;

// The two differ only in digits: Llama 3 groups up to three, Qwen2 splits each.
constexpr std::string_view kLlama3Split = R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})re"
                                          R"re(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kQwen2Split = R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})re"
                                         R"re(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kByteLevelSpace = "\xc4\xa0";  // U+0120, byte-level BPE's space

std::string string_member(const json& object, std::string_view key) {
    const json* value = member(object, key);
    return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

// The Split regexes of a pre_tokenizer (recursing into Sequence), and whether a ByteLevel step splits by GPT-2's own
// regex.
void collect_splits(const json& node, std::vector<std::string>* splits, bool* byte_level_regex) {
    const std::string type = string_member(node, "type");
    if (type == "Sequence") {
        const json* children = member(node, "pretokenizers");
        if (children != nullptr && children->is_array()) {
            for (const json& child : *children) collect_splits(child, splits, byte_level_regex);
        }
    } else if (type == "Split") {
        const json* pattern = member(node, "pattern");
        if (pattern != nullptr) splits->push_back(string_member(*pattern, "Regex"));
    } else if (type == "ByteLevel") {
        const json* use_regex = member(node, "use_regex");
        if (use_regex == nullptr || (use_regex->is_boolean() && use_regex->get<bool>())) *byte_level_regex = true;
    }
}

std::string detect_pre_tokenizer(const json& tokenizer, const std::string& label, const HfConfig& config) {
    std::vector<std::string> splits;
    bool byte_level_regex = false;
    if (const json* pre = member(tokenizer, "pre_tokenizer")) collect_splits(*pre, &splits, &byte_level_regex);
    if (splits.size() == 1 && splits[0] == kLlama3Split) return "llama-bpe";
    if (splits.size() == 1 && splits[0] == kQwen2Split) return "qwen2";
    if (splits.empty() && byte_level_regex) return "gpt-2";
    const bool qwen = config.architecture == "qwen2" || config.architecture == "qwen3";
    const std::string fallback = qwen ? "qwen2" : "llama-bpe";
    log_warn("{}: pre-tokenizer not recognised; using '{}' (the {} family's); tokenization may differ", label,
             fallback, config.architecture);
    return fallback;
}

Status read_vocab_ids(const json& model, const std::string& label, GgufVocab* vocab) {
    const json* entries = member(model, "vocab");
    if (entries == nullptr || !entries->is_object()) {
        return invalid_argument(fmt::format("{}: model.vocab must be an object (token -> id)", label));
    }
    const int64_t vocab_size = static_cast<int64_t>(vocab->tokens.size());
    std::vector<bool> seen(vocab->tokens.size(), false);
    for (const auto& [text, id_json] : entries->items()) {
        const std::optional<uint64_t> id_value = json_to_uint(id_json);
        if (!id_value || *id_value >= static_cast<uint64_t>(vocab_size)) {
            return invalid_argument(fmt::format("{}: token '{}' has id {}, outside the model's vocab_size {}", label,
                                                printable(text), id_json.dump(), vocab_size));
        }
        const size_t id = static_cast<size_t>(*id_value);
        if (seen[id]) return invalid_argument(fmt::format("{}: two tokens have id {}", label, id));
        seen[id] = true;
        vocab->tokens[id] = text;
        vocab->token_types[id] = static_cast<int32_t>(TokenType::kNormal);
    }
    return Status::ok();
}

Status read_added_tokens(const json& tokenizer, const std::string& label, GgufVocab* vocab) {
    const json* added = member(tokenizer, "added_tokens");
    if (added == nullptr) return Status::ok();
    if (!added->is_array()) return invalid_argument(fmt::format("{}: added_tokens must be an array", label));
    for (const json& entry : *added) {
        const json* id_json = member(entry, "id");
        const json* content = member(entry, "content");
        const std::optional<uint64_t> id = id_json != nullptr ? json_to_uint(*id_json) : std::nullopt;
        if (!id || content == nullptr || !content->is_string() || *id >= vocab->tokens.size()) {
            return invalid_argument(fmt::format("{}: added token {} needs an id below vocab_size {} and a content "
                                                "string", label, entry.dump(), vocab->tokens.size()));
        }
        const json* special = member(entry, "special");
        vocab_util::set_added_token(vocab, static_cast<size_t>(*id), content->get<std::string>(),
                                    special != nullptr && special->is_boolean() && special->get<bool>());
    }
    return Status::ok();
}

// Merges come as "left right" strings, or (transformers >= 4.45) as ["left", "right"] pairs, whose spaces are
// written as byte-level spaces so the pair survives being joined by one.
Status read_merges(const json& model, const std::string& label, std::vector<std::string>* merges) {
    const json* entries = member(model, "merges");
    if (entries == nullptr || !entries->is_array() || entries->empty()) {
        return invalid_argument(fmt::format("{}: model.merges is missing or empty", label));
    }
    merges->reserve(entries->size());
    for (const json& entry : *entries) {
        if (entry.is_string()) {
            merges->push_back(entry.get<std::string>());
        } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_string()) {
            merges->push_back(replace_all(entry[0].get<std::string>(), " ", kByteLevelSpace) + " " +
                              replace_all(entry[1].get<std::string>(), " ", kByteLevelSpace));
        } else {
            return invalid_argument(fmt::format("{}: merge {} is neither \"left right\" nor [\"left\", \"right\"]",
                                                label, entry.dump()));
        }
    }
    return Status::ok();
}

}  // namespace

bool looks_like_special_token(std::string_view text) {
    if (text == "<pad>" || text == "<mask>" || text == "<2mass>" || text == "[@BOS@]") return true;
    if (text.starts_with("<|") && text.ends_with("|>")) return true;
    if (text.starts_with("<\xef\xbd\x9c") && text.ends_with("\xef\xbd\x9c>")) return true;  // fullwidth bars
    return text.starts_with("<unused") && text.ends_with(">");
}

Result<GgufVocab> read_bpe_vocab(const json& tokenizer, const std::string& label, const HfConfig& config) {
    const json* model = member(tokenizer, "model");
    if (model == nullptr || string_member(*model, "type") != "BPE") {
        return invalid_argument(fmt::format("{}: model.type is not BPE; tern converts byte-level BPE tokenizer.json "
                                            "files and SentencePiece tokenizer.model files", label));
    }
    const json* byte_fallback = member(*model, "byte_fallback");
    const json* decoder = member(tokenizer, "decoder");
    if ((byte_fallback != nullptr && byte_fallback->is_boolean() && byte_fallback->get<bool>()) ||
        decoder == nullptr || string_member(*decoder, "type") != "ByteLevel") {
        return invalid_argument(fmt::format("{}: not a byte-level BPE tokenizer (SentencePiece-style BPE needs the "
                                            "folder's tokenizer.model)", label));
    }
    GgufVocab vocab;
    vocab.model = "gpt2";
    vocab.tokens.resize(static_cast<size_t>(config.vocab_size));
    for (size_t id = 0; id < vocab.tokens.size(); ++id) vocab.tokens[id] = fmt::format("[PAD{}]", id);
    vocab.token_types.assign(vocab.tokens.size(), static_cast<int32_t>(TokenType::kUnused));
    TERN_RETURN_IF_ERROR(read_vocab_ids(*model, label, &vocab));
    TERN_RETURN_IF_ERROR(read_added_tokens(tokenizer, label, &vocab));
    TERN_RETURN_IF_ERROR(read_merges(*model, label, &vocab.merges));
    vocab.pre = detect_pre_tokenizer(tokenizer, label, config);
    return vocab;
}

}  // namespace tern
