// Safetensors input from anywhere: a file's bytes (8-byte header length, JSON header, data), or, when the first byte
// is '{', a model.safetensors.index.json. Refused with a Status, or accepted with every tensor's byte range inside the
// buffer and every shard a plain file name.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "formats/safetensors.h"
#include "formats/strict_json.h"
#include "fuzz_util.h"

namespace {

void fuzz_index(std::string_view text) {
    auto index = tern::parse_strict_json(text, "fuzz.index.json");
    if (!index.is_ok()) return;
    auto weight_map = tern::safetensors_weight_map(index.value(), "fuzz.index.json");
    if (!weight_map.is_ok()) return;
    for (const auto& [tensor, shard] : weight_map.value()) {
        TERN_FUZZ_CHECK(shard.find('/') == std::string::npos && shard != "..", "a shard outside the folder");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 0 && data[0] == '{') {
        fuzz_index(std::string_view(reinterpret_cast<const char*>(data), size));
        return 0;
    }
    auto parsed = tern::SafetensorsFile::parse(data, size, "fuzz");
    if (!parsed.is_ok()) return 0;
    size_t checksum = 0;
    for (const auto& tensor : parsed.value()->tensors()) {
        if (tensor.num_bytes() > 0) checksum += tensor.data[0] + tensor.data[tensor.num_bytes() - 1];
    }
    tern::fuzz::keep(checksum);
    return 0;
}
