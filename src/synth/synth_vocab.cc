#include "synth/synth_vocab.h"

#include <fmt/format.h>

namespace tern {
namespace {

constexpr const char* kWordMarker = "\xe2\x96\x81";  // U+2581, SentencePiece's space

class VocabBuilder {
public:
    explicit VocabBuilder(int64_t size) : size_(size) {}

    bool full() const { return static_cast<int64_t>(vocab_.tokens.size()) >= size_; }

    void add(std::string piece, int32_t type) {
        if (full()) return;
        // Lower scores for later pieces: SentencePiece merges prefer higher scores.
        vocab_.scores.push_back(type == 1 ? -static_cast<float>(vocab_.tokens.size()) : 0.0f);
        vocab_.tokens.push_back(std::move(piece));
        vocab_.token_types.push_back(type);
    }

    // Adds every lowercase n-gram of `length`, plain and with the word marker.
    void add_ngrams(int length) {
        std::string gram(static_cast<size_t>(length), 'a');
        while (!full()) {
            add(kWordMarker + gram, 1);
            add(gram, 1);
            int position = length - 1;
            while (position >= 0 && gram[static_cast<size_t>(position)] == 'z') gram[static_cast<size_t>(position--)] = 'a';
            if (position < 0) return;
            ++gram[static_cast<size_t>(position)];
        }
    }

    SynthVocab take() { return std::move(vocab_); }

private:
    int64_t size_;
    SynthVocab vocab_;
};

}  // namespace

Result<SynthVocab> make_synth_vocab(int64_t vocab_size) {
    if (vocab_size < 512) return invalid_argument(fmt::format("a synthetic vocabulary needs >= 512 tokens, got {}", vocab_size));
    VocabBuilder builder(vocab_size);
    builder.add("<unk>", 2);
    builder.add("<s>", 3);
    builder.add("</s>", 3);
    for (int byte = 0; byte < 256; ++byte) builder.add(fmt::format("<0x{:02X}>", byte), 6);
    builder.add(kWordMarker, 1);
    for (char c = '!'; c <= '~'; ++c) builder.add(std::string(1, c), 1);
    for (char c = '!'; c <= '~'; ++c) builder.add(kWordMarker + std::string(1, c), 1);
    for (int length = 2; !builder.full(); ++length) builder.add_ngrams(length);
    return builder.take();
}

void replace_last_tokens(SynthVocab* vocab, const std::vector<std::string>& texts) {
    const size_t first = vocab->tokens.size() - texts.size();
    for (size_t idx = 0; idx < texts.size(); ++idx) {
        vocab->tokens[first + idx] = texts[idx];
        vocab->scores[first + idx] = 0.0f;
        vocab->token_types[first + idx] = 3;
    }
}

void add_vocab_metadata(const SynthVocab& vocab, GgufWriter* writer) {
    writer->add_string("tokenizer.ggml.model", "llama");
    writer->add_string("tokenizer.ggml.pre", "default");
    writer->add_string_array("tokenizer.ggml.tokens", vocab.tokens);
    writer->add_f32_array("tokenizer.ggml.scores", vocab.scores);
    writer->add_i32_array("tokenizer.ggml.token_type", vocab.token_types);
    writer->add_u32("tokenizer.ggml.unknown_token_id", 0);
    writer->add_u32("tokenizer.ggml.bos_token_id", 1);
    writer->add_u32("tokenizer.ggml.eos_token_id", 2);
    writer->add_bool("tokenizer.ggml.add_bos_token", true);
    writer->add_bool("tokenizer.ggml.add_eos_token", false);
}

}  // namespace tern
