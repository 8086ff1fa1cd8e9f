// Choosing the tokenizer file, then the special tokens and chat template around it. Precedence for each special
// id, as llama.cpp's converter: tokenizer_config.json's token text, then config.json's *_token_id, then the
// SentencePiece model's own ids.
#include "convert/hf_vocab.h"

#include <fmt/format.h>

#include <filesystem>

#include "base/log.h"
#include "base/mapped_file.h"
#include "base/printable.h"
#include "convert/vocab_util.h"
#include "formats/strict_json.h"

namespace tern {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool file_exists(const fs::path& path) {
    std::error_code error;
    return fs::is_regular_file(path, error);
}

using vocab_util::member;

// The id of a special token named by text: among tokenizer.json's added tokens first, then the whole vocabulary.
std::optional<int32_t> find_token_id(const GgufVocab& vocab, const json& added_tokens, const std::string& text) {
    if (added_tokens.is_array()) {
        for (const json& entry : added_tokens) {
            const json* content = member(entry, "content");
            const json* id = member(entry, "id");
            if (content == nullptr || id == nullptr || !content->is_string() || content->get<std::string>() != text) {
                continue;
            }
            const uint64_t id_value = json_to_uint(*id).value_or(UINT64_MAX);
            if (id_value < vocab.tokens.size()) return static_cast<int32_t>(id_value);
        }
    }
    for (size_t id = 0; id < vocab.tokens.size(); ++id) {
        if (vocab.tokens[id] == text) return static_cast<int32_t>(id);
    }
    return std::nullopt;
}

void set_from_config(std::optional<int32_t>& slot, std::optional<int64_t> id, const GgufVocab& vocab) {
    if (id && *id < static_cast<int64_t>(vocab.tokens.size())) slot = static_cast<int32_t>(*id);
}

void apply_tokenizer_config(const json& tokenizer_config, const json& added_tokens, GgufVocab* vocab) {
    struct Special {
        const char* name;
        std::optional<int32_t>* slot;
    };
    const Special specials[] = {{"bos", &vocab->bos_id}, {"eos", &vocab->eos_id}, {"unk", &vocab->unk_id},
                                {"pad", &vocab->pad_id}};
    for (const Special& special : specials) {
        const json* entry = member(tokenizer_config, fmt::format("{}_token", special.name));
        if (entry != nullptr && entry->is_object()) entry = member(*entry, "content");
        if (entry == nullptr || !entry->is_string()) continue;
        if (auto id = find_token_id(*vocab, added_tokens, entry->get<std::string>())) *special.slot = id;
    }
    if (const json* add_bos = member(tokenizer_config, "add_bos_token"); add_bos && add_bos->is_boolean()) {
        vocab->add_bos = add_bos->get<bool>();
    }
    if (const json* add_eos = member(tokenizer_config, "add_eos_token"); add_eos && add_eos->is_boolean()) {
        vocab->add_eos = add_eos->get<bool>();
    }
}

// Tokens added on top of a SentencePiece model (added_tokens.json, tokenizer_config.json "added_tokens_decoder").
// Only ids the model leaves unused are filled: the model's own pieces keep their types.
Status apply_spm_added_tokens(const fs::path& dir, const json& tokenizer_config, GgufVocab* vocab) {
    auto add = [&](uint64_t id, std::string text, bool special) {
        if (id >= vocab->tokens.size()) {
            log_warn("{}: added token '{}' has id {}, beyond the vocabulary of {}; ignored", dir.string(),
                     printable(text), id, vocab->tokens.size());
            return;
        }
        if (vocab->token_types[id] != static_cast<int32_t>(TokenType::kUnused)) return;
        vocab_util::set_added_token(vocab, id, std::move(text), special);
    };
    if (const json* decoder = member(tokenizer_config, "added_tokens_decoder"); decoder && decoder->is_object()) {
        for (const auto& [key, entry] : decoder->items()) {
            const json* content = member(entry, "content");
            const json* special = member(entry, "special");
            if (content == nullptr || !content->is_string() || key.empty() ||
                key.find_first_not_of("0123456789") != std::string::npos || key.size() > 9) {
                continue;
            }
            const bool is_special = special != nullptr && special->is_boolean() && special->get<bool>();
            add(std::stoull(key), content->get<std::string>(), is_special);
        }
    }
    if (!file_exists(dir / "added_tokens.json")) return Status::ok();
    TERN_ASSIGN_OR_RETURN(json added, read_strict_json_file((dir / "added_tokens.json").string()));
    if (!added.is_object()) return invalid_argument((dir / "added_tokens.json").string() + ": must map text to id");
    for (const auto& [text, id] : added.items()) {
        if (const std::optional<uint64_t> id_value = json_to_uint(id)) add(*id_value, text, false);
    }
    return Status::ok();
}

// A template is a string, or a list of {"name", "template"} whose "default" becomes tokenizer.chat_template.
// Newer folders keep it in chat_template.jinja instead.
Status read_chat_template(const fs::path& dir, const json& tokenizer_config, GgufVocab* vocab) {
    const json* chat_template = member(tokenizer_config, "chat_template");
    if (chat_template != nullptr && chat_template->is_string()) {
        vocab->chat_template = chat_template->get<std::string>();
    } else if (chat_template != nullptr && chat_template->is_array()) {
        for (const json& entry : *chat_template) {
            const json* name = member(entry, "name");
            const json* text = member(entry, "template");
            if (name == nullptr || text == nullptr || !name->is_string() || !text->is_string()) continue;
            if (name->get<std::string>() == "default") {
                vocab->chat_template = text->get<std::string>();
            } else {
                vocab->named_chat_templates.emplace_back(name->get<std::string>(), text->get<std::string>());
            }
        }
    } else if (file_exists(dir / "chat_template.jinja")) {
        TERN_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file,
                              MappedFile::open((dir / "chat_template.jinja").string()));
        vocab->chat_template.assign(reinterpret_cast<const char*>(file->data()), file->size());
    }
    return Status::ok();
}

}  // namespace

Result<GgufVocab> read_hf_vocab(const std::string& hf_dir, const HfConfig& config) {
    const fs::path dir(hf_dir);
    json tokenizer_json;  // null when the folder has no tokenizer.json
    GgufVocab vocab;
    if (file_exists(dir / "tokenizer.json")) {
        TERN_ASSIGN_OR_RETURN(tokenizer_json, read_strict_json_file((dir / "tokenizer.json").string()));
    }
    if (file_exists(dir / "tokenizer.model")) {
        TERN_ASSIGN_OR_RETURN(vocab, read_spm_vocab((dir / "tokenizer.model").string(), config.vocab_size));
    } else if (!tokenizer_json.is_null()) {
        TERN_ASSIGN_OR_RETURN(vocab, read_bpe_vocab(tokenizer_json, (dir / "tokenizer.json").string(), config));
    } else {
        return Status(StatusCode::kNotFound, fmt::format("{}: no tokenizer.model or tokenizer.json; tern needs the "
                                                         "model's tokenizer", hf_dir));
    }
    set_from_config(vocab.bos_id, config.bos_token_id, vocab);
    set_from_config(vocab.eos_id, config.eos_token_id, vocab);
    set_from_config(vocab.unk_id, config.unk_token_id, vocab);
    set_from_config(vocab.pad_id, config.pad_token_id, vocab);
    json tokenizer_config;
    if (file_exists(dir / "tokenizer_config.json")) {
        TERN_ASSIGN_OR_RETURN(tokenizer_config, read_strict_json_file((dir / "tokenizer_config.json").string()));
    }
    if (vocab.model == "llama") TERN_RETURN_IF_ERROR(apply_spm_added_tokens(dir, tokenizer_config, &vocab));
    if (vocab.model == "llama" && config.is_gemma()) vocab.add_space_prefix = false;
    const json* added_tokens = member(tokenizer_json, "added_tokens");
    apply_tokenizer_config(tokenizer_config, added_tokens != nullptr ? *added_tokens : json(), &vocab);
    TERN_RETURN_IF_ERROR(read_chat_template(dir, tokenizer_config, &vocab));
    return vocab;
}

void write_vocab_metadata(const GgufVocab& vocab, GgufWriter* writer) {
    writer->add_string("tokenizer.ggml.model", vocab.model);
    writer->add_string("tokenizer.ggml.pre", vocab.pre);
    writer->add_string_array("tokenizer.ggml.tokens", vocab.tokens);
    if (!vocab.scores.empty()) writer->add_f32_array("tokenizer.ggml.scores", vocab.scores);
    writer->add_i32_array("tokenizer.ggml.token_type", vocab.token_types);
    if (!vocab.merges.empty()) writer->add_string_array("tokenizer.ggml.merges", vocab.merges);
    auto add_id = [&](const char* key, const std::optional<int32_t>& id) {
        if (id) writer->add_u32(key, static_cast<uint32_t>(*id));
    };
    add_id("tokenizer.ggml.bos_token_id", vocab.bos_id);
    add_id("tokenizer.ggml.eos_token_id", vocab.eos_id);
    add_id("tokenizer.ggml.unknown_token_id", vocab.unk_id);
    add_id("tokenizer.ggml.padding_token_id", vocab.pad_id);
    if (vocab.add_bos) writer->add_bool("tokenizer.ggml.add_bos_token", *vocab.add_bos);
    if (vocab.add_eos) writer->add_bool("tokenizer.ggml.add_eos_token", *vocab.add_eos);
    if (vocab.add_space_prefix) writer->add_bool("tokenizer.ggml.add_space_prefix", *vocab.add_space_prefix);
    if (!vocab.chat_template.empty()) writer->add_string("tokenizer.chat_template", vocab.chat_template);
    for (const auto& [name, text] : vocab.named_chat_templates) {
        writer->add_string("tokenizer.chat_template." + name, text);
    }
}

}  // namespace tern
