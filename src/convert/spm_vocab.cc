// tokenizer.model (a SentencePiece model) -> GGUF model "llama", read through Debian's libsentencepiece.
#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include <exception>

#include "convert/hf_vocab.h"
#include "tokenizer/vocab.h"

namespace tern {
namespace {

TokenType piece_type(const sentencepiece::SentencePieceProcessor& processor, int id) {
    if (processor.IsUnknown(id)) return TokenType::kUnknown;
    if (processor.IsControl(id)) return TokenType::kControl;
    if (processor.IsUnused(id)) return TokenType::kUnused;
    if (processor.IsByte(id)) return TokenType::kByte;
    return TokenType::kNormal;
}

std::optional<int32_t> valid_id(int id, int64_t vocab_size) {
    return id >= 0 && id < vocab_size ? std::optional<int32_t>(id) : std::nullopt;
}

}  // namespace

Result<GgufVocab> read_spm_vocab(const std::string& model_path, int64_t vocab_size) {
    sentencepiece::SentencePieceProcessor processor;
    try {
        const sentencepiece::util::Status status = processor.Load(model_path);
        if (!status.ok()) {
            return invalid_argument(fmt::format("{}: not a SentencePiece model: {}", model_path, status.ToString()));
        }
    } catch (const std::exception& error) {
        return invalid_argument(fmt::format("{}: not a SentencePiece model: {}", model_path, error.what()));
    }
    const int num_pieces = processor.GetPieceSize();
    if (num_pieces <= 0 || num_pieces > vocab_size) {
        return invalid_argument(fmt::format("{}: {} pieces do not fit the model's vocab_size {}", model_path,
                                            num_pieces, vocab_size));
    }
    GgufVocab vocab;
    vocab.model = "llama";
    vocab.pre = "default";
    // Ids beyond the SentencePiece model (a padded embedding) get placeholders, as llama.cpp's converter writes them.
    vocab.tokens.reserve(static_cast<size_t>(vocab_size));
    for (int64_t id = 0; id < vocab_size; ++id) {
        if (id < num_pieces) {
            vocab.tokens.push_back(processor.IdToPiece(static_cast<int>(id)));
            vocab.scores.push_back(processor.GetScore(static_cast<int>(id)));
            vocab.token_types.push_back(static_cast<int32_t>(piece_type(processor, static_cast<int>(id))));
        } else {
            vocab.tokens.push_back(fmt::format("[PAD{}]", id));
            vocab.scores.push_back(-10000.0f);
            vocab.token_types.push_back(static_cast<int32_t>(TokenType::kUnused));
        }
    }
    vocab.bos_id = valid_id(processor.bos_id(), vocab_size);
    vocab.eos_id = valid_id(processor.eos_id(), vocab_size);
    vocab.unk_id = valid_id(processor.unk_id(), vocab_size);
    vocab.pad_id = valid_id(processor.pad_id(), vocab_size);
    return vocab;
}

}  // namespace tern
