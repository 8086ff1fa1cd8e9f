// Prompts are any bytes a client sends. With each of the shared test vocabularies (SentencePiece and byte-level BPE
// with several pre-tokenizers): encoding must not crash, every id must be in the vocabulary, and for valid UTF-8
// decoding gives the text back wherever the vocabulary can hold the text (see `representable` below).
// Input: a byte choosing the vocabulary and the flags, then the text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.h"
#include "formats/gguf.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

struct LoadedVocab {
    std::unique_ptr<tern::GgufFile> file;
    std::unique_ptr<tern::Tokenizer> tokenizer;
    // Bytes a byte-level BPE vocabulary has no token for (Falcon's lacks 28): encoding drops them, as llama.cpp does.
    std::string unencodable_bytes;
};

std::vector<LoadedVocab>& vocabs() {
    static std::vector<LoadedVocab> loaded;
    return loaded;
}

bool valid_utf8(std::string_view text) {
    while (!text.empty()) {
        const tern::Utf8Step step = tern::next_utf8_sequence(text);
        if (step.status != tern::Utf8Status::kValid) return false;
        text.remove_prefix(step.length);
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    for (const char* name : {"llama-spm", "gpt-2", "qwen2", "falcon", "deepseek-coder"}) {
        const std::string path = std::string(TERN_SHARED_DIR) + "/vocab/ggml-vocab-" + name + ".gguf";
        auto file = tern::GgufFile::open(path);
        if (!file.is_ok()) {
            std::fprintf(stderr, "tokenizer_fuzz needs the shared vocabularies: %s\n", file.status().message().c_str());
            std::exit(1);
        }
        auto tokenizer = tern::Tokenizer::from_gguf(*file.value());
        TERN_FUZZ_CHECK(tokenizer.is_ok(), path.c_str());
        std::string unencodable;
        for (int byte = 0; byte < 256 && tokenizer.value()->kind() == tern::VocabKind::kBpe; ++byte) {
            const auto stand_in = tern::unicode::byte_to_unicode(static_cast<uint8_t>(byte));
            if (!tokenizer.value()->find_token(stand_in)) unencodable.push_back(static_cast<char>(byte));
        }
        vocabs().push_back({std::move(file.value()), std::move(tokenizer.value()), std::move(unencodable)});
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const LoadedVocab& vocab = vocabs()[data[0] % vocabs().size()];
    const bool add_special = (data[0] & 0x40) != 0;
    const bool parse_special = (data[0] & 0x80) != 0;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    const tern::Tokenizer& tokenizer = *vocab.tokenizer;
    const std::vector<int32_t> ids = tokenizer.encode(text, add_special, parse_special);
    for (int32_t id : ids) TERN_FUZZ_CHECK(id >= 0 && id < tokenizer.vocab_size(), "an id outside the vocabulary");
    const std::string decoded = tokenizer.decode(ids, /*remove_special=*/add_special, /*render_special=*/parse_special);
    // The round trip holds for valid UTF-8 except where the vocabulary cannot hold the text: SentencePiece's own
    // space mark, bytes without a token, and vocabularies whose decoder tidies spaces (" ." becomes ".").
    const bool spm = tokenizer.kind() == tern::VocabKind::kSpm;
    const bool representable = !(spm && text.find("\xe2\x96\x81") != std::string_view::npos) &&
                               text.find_first_of(vocab.unencodable_bytes) == std::string_view::npos &&
                               !tokenizer.clean_spaces();
    // With special tokens added or parsed, decoding follows llama.cpp's rules for the space after them (a BOS keeps
    // the space prefix), which the golden tests check; the round trip is asked of plain text.
    const bool plain = !add_special && !parse_special;
    if (plain && valid_utf8(text) && representable) {
        if (decoded != text) {
            std::fprintf(stderr, "decoded %zu bytes: [%s] from %zu ids:", decoded.size(), decoded.c_str(), ids.size());
            for (int32_t id : ids) std::fprintf(stderr, " %d=[%s]", id, tokenizer.token_text(id).c_str());
            std::fprintf(stderr, "\n");
        }
        TERN_FUZZ_CHECK(decoded == text, "decode(encode(text)) differs from the text");
    }
    return 0;
}
