#include "tokenizer/vocab.h"

#include <fmt/format.h>

#include "base/log.h"
#include "base/printable.h"
#include "formats/gguf.h"
#include "tokenizer/pre_tokenizer.h"

namespace tern {
namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";

// An array under `key` whose elements are of one of `types`; nullptr when the key is absent.
Result<const std::vector<GgufValue>*> find_array(const GgufFile& gguf, std::string_view key,
                                                 std::initializer_list<GgufType> types) {
    const GgufValue* value = gguf.find(key);
    if (value == nullptr) return static_cast<const std::vector<GgufValue>*>(nullptr);
    if (value->type == GgufType::kArray) {
        for (GgufType type : types) {
            if (value->array_type == type) return &value->array;
        }
    }
    std::string expected;
    for (GgufType type : types) expected += (expected.empty() ? "" : " or ") + std::string(gguf_type_name(type));
    const std::string_view actual =
        value->type == GgufType::kArray ? gguf_type_name(value->array_type) : gguf_type_name(value->type);
    return invalid_argument(fmt::format("{}: {} must be an array of {}, found {}{}", gguf.path(), key, expected,
                                        value->type == GgufType::kArray ? "an array of " : "", actual));
}

Status read_kind(const GgufFile& gguf, VocabData& vocab) {
    const std::optional<std::string> model = gguf.get_string(kModelKey);
    if (!model) return invalid_argument(fmt::format("{}: missing string {}", gguf.path(), kModelKey));
    if (*model == "llama") {
        vocab.kind = VocabKind::kSpm;
        vocab.bos_id = 1;
        vocab.eos_id = 2;
        vocab.unk_id = 0;
        vocab.add_bos = true;
        vocab.add_space_prefix = true;
        return Status::ok();
    }
    if (*model != "gpt2") {
        return invalid_argument(fmt::format("{}: unsupported tokenizer model '{}' ({}); supported: llama, gpt2",
                                            gguf.path(), printable(*model), kModelKey));
    }
    vocab.kind = VocabKind::kBpe;
    vocab.bos_id = 11;
    vocab.eos_id = 11;
    const std::optional<std::string> pre = gguf.get_string(kPreKey);
    if (!pre || pre->empty()) {
        log_warn("{}: no {}, using 'default'; tokenization may not match the model's training", gguf.path(), kPreKey);
    }
    vocab.pre = pre && !pre->empty() ? *pre : "default";
    const PreTokenizerInfo* info = find_pre_tokenizer(vocab.pre);
    if (info == nullptr) {
        return invalid_argument(fmt::format("{}: unknown pre-tokenizer '{}' ({}); supported: {}", gguf.path(),
                                            printable(vocab.pre), kPreKey, supported_pre_tokenizers()));
    }
    vocab.add_bos = info->add_bos;
    return Status::ok();
}

Status read_arrays(const GgufFile& gguf, VocabData& vocab) {
    TERN_ASSIGN_OR_RETURN(const auto* tokens, find_array(gguf, kTokensKey, {GgufType::kString}));
    if (tokens == nullptr) return invalid_argument(fmt::format("{}: missing token list {}", gguf.path(), kTokensKey));
    const size_t count = tokens->size();
    vocab.tokens.reserve(count);
    for (const GgufValue& token : *tokens) vocab.tokens.push_back(token.string_value);

    auto check_length = [&](std::string_view key, size_t length) -> Status {
        if (length >= count) return Status::ok();
        return invalid_argument(
            fmt::format("{}: {} has {} entries for {} tokens", gguf.path(), key, length, count));
    };
    TERN_ASSIGN_OR_RETURN(const auto* scores, find_array(gguf, kScoresKey, {GgufType::kF32, GgufType::kI32}));
    if (scores != nullptr) {
        TERN_RETURN_IF_ERROR(check_length(kScoresKey, scores->size()));
        vocab.scores.reserve(count);
        for (size_t i = 0; i < count; ++i) {
            const GgufValue& score = (*scores)[i];
            vocab.scores.push_back(score.is_float() ? static_cast<float>(score.float_value)
                                                    : static_cast<float>(score.int_value));
        }
    }
    TERN_ASSIGN_OR_RETURN(const auto* types, find_array(gguf, kTypesKey, {GgufType::kI32}));
    if (types != nullptr) {
        TERN_RETURN_IF_ERROR(check_length(kTypesKey, types->size()));
        vocab.token_types.reserve(count);
        for (size_t i = 0; i < count; ++i) {
            const int64_t type = (*types)[i].int_value;
            vocab.token_types.push_back(type >= 0 && type <= 6 ? static_cast<TokenType>(type) : TokenType::kUndefined);
        }
    }
    if (vocab.kind == VocabKind::kBpe) {
        TERN_ASSIGN_OR_RETURN(const auto* merges, find_array(gguf, kMergesKey, {GgufType::kString}));
        if (merges == nullptr) {
            return invalid_argument(fmt::format("{}: missing BPE merges {}", gguf.path(), kMergesKey));
        }
        vocab.merges.reserve(merges->size());
        for (const GgufValue& merge : *merges) vocab.merges.push_back(merge.string_value);
    }
    return Status::ok();
}

// llama.cpp drops a default id that the vocabulary cannot hold and ignores an out-of-range id from the file.
void read_special_id(const GgufFile& gguf, std::string_view key, int32_t& id, size_t vocab_size) {
    if (id >= 0 && static_cast<size_t>(id) >= vocab_size) id = kNoToken;
    const std::optional<int64_t> value = gguf.get_int(key);
    if (!value) return;
    if (*value < 0 || static_cast<uint64_t>(*value) >= vocab_size) {
        log_warn("{}: {} = {} is outside the vocabulary of {}, keeping {}", gguf.path(), key, *value, vocab_size, id);
        return;
    }
    id = static_cast<int32_t>(*value);
}

Status read_special(const GgufFile& gguf, VocabData& vocab) {
    const size_t size = vocab.tokens.size();
    read_special_id(gguf, "tokenizer.ggml.bos_token_id", vocab.bos_id, size);
    read_special_id(gguf, "tokenizer.ggml.eos_token_id", vocab.eos_id, size);
    read_special_id(gguf, "tokenizer.ggml.eot_token_id", vocab.eot_id, size);
    read_special_id(gguf, "tokenizer.ggml.eom_token_id", vocab.eom_id, size);
    read_special_id(gguf, "tokenizer.ggml.fim_pre_token_id", vocab.fim_pre_id, size);
    read_special_id(gguf, "tokenizer.ggml.fim_suf_token_id", vocab.fim_suf_id, size);
    read_special_id(gguf, "tokenizer.ggml.fim_mid_token_id", vocab.fim_mid_id, size);
    read_special_id(gguf, "tokenizer.ggml.unknown_token_id", vocab.unk_id, size);
    read_special_id(gguf, "tokenizer.ggml.padding_token_id", vocab.pad_id, size);
    if (auto value = gguf.get_bool("tokenizer.ggml.add_space_prefix")) vocab.add_space_prefix = *value;
    if (auto value = gguf.get_bool("tokenizer.ggml.add_bos_token")) vocab.add_bos = *value;
    if (auto value = gguf.get_bool("tokenizer.ggml.add_eos_token")) vocab.add_eos = *value;
    if (vocab.add_bos && vocab.bos_id == kNoToken) {
        return invalid_argument(fmt::format("{}: add_bos_token is true but there is no BOS token", gguf.path()));
    }
    if (vocab.add_eos && vocab.eos_id == kNoToken) {
        return invalid_argument(fmt::format("{}: add_eos_token is true but there is no EOS token", gguf.path()));
    }
    return Status::ok();
}

}  // namespace

Result<VocabData> vocab_from_gguf(const GgufFile& gguf) {
    VocabData vocab;
    TERN_RETURN_IF_ERROR(read_kind(gguf, vocab));
    TERN_RETURN_IF_ERROR(read_arrays(gguf, vocab));
    TERN_RETURN_IF_ERROR(read_special(gguf, vocab));
    return vocab;
}

}  // namespace tern
