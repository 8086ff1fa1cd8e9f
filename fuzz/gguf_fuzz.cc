// GGUF bytes from anywhere: the reader must refuse them with a Status or accept them, never read outside the buffer,
// and a file it accepts must be walkable: every metadata value, every tensor's bytes, and the vocabulary built from it.
#include <cstddef>
#include <cstdint>

#include "formats/gguf.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto parsed = tern::GgufFile::parse(data, size, "fuzz");
    if (!parsed.is_ok()) return 0;
    const tern::GgufFile& file = *parsed.value();
    size_t checksum = 0;
    for (const auto& [key, value] : file.metadata()) checksum += key.size() + value.array.size();
    for (const tern::GgufTensorInfo& tensor : file.tensors()) {
        // The reader promised these bytes are inside the buffer: ASan checks the promise.
        if (tensor.num_bytes > 0) checksum += tensor.data[0] + tensor.data[tensor.num_bytes - 1];
    }
    auto tokenizer = tern::Tokenizer::from_gguf(file);
    if (tokenizer.is_ok()) checksum += tokenizer.value()->encode("Hello world", true, false).size();
    tern::fuzz::keep(checksum);
    return 0;
}
