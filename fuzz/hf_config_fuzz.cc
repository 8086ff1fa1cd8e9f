// A Hugging Face folder's JSON files from anywhere: config.json (parse_hf_config) and tokenizer.json (the BPE vocabulary
// reader). Either is refused with a Status or read into values that satisfy what the converter relies on.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "convert/hf_config.h"
#include "convert/hf_vocab.h"
#include "formats/strict_json.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto config = tern::parse_hf_config(text, "config.json");
    if (config.is_ok()) {
        const tern::HfConfig& parsed = config.value();
        TERN_FUZZ_CHECK(parsed.hidden_size > 0 && parsed.num_layers > 0 && parsed.num_heads > 0, "sizes");
        TERN_FUZZ_CHECK(parsed.num_kv_heads > 0 && parsed.num_heads % parsed.num_kv_heads == 0, "head counts");
    }
    auto tokenizer = tern::parse_strict_json(text, "tokenizer.json");
    if (!tokenizer.is_ok()) return 0;
    tern::HfConfig vocab_config;
    vocab_config.vocab_size = 4096;  // the reader pads to it: small keeps an execution fast
    auto vocab = tern::read_bpe_vocab(tokenizer.value(), "tokenizer.json", vocab_config);
    if (!vocab.is_ok()) return 0;
    TERN_FUZZ_CHECK(vocab.value().tokens.size() == 4096, "the vocabulary has config.vocab_size tokens");
    TERN_FUZZ_CHECK(vocab.value().token_types.size() == 4096, "a type per token");
    return 0;
}
