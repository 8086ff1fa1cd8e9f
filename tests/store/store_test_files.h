// Small GGUF files for the store's tests: distinct contents (a seed in the metadata and the tensor), real GGUF.
#pragma once

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/gguf_writer.h"

namespace tern::testing {

inline std::string store_test_dir(const std::string& name) {
    const std::string dir = std::string(TERN_TEST_TMP) + "/store/" + name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

// A GGUF of about `floats` * 4 bytes whose bytes depend on `seed`.
inline std::string write_test_gguf(const std::string& path, int seed, int floats = 256) {
    GgufWriter writer;
    writer.add_string("general.architecture", "llama");
    writer.add_u32("test.seed", static_cast<uint32_t>(seed));
    std::vector<float> values(static_cast<size_t>(floats));
    for (size_t idx = 0; idx < values.size(); ++idx) values[idx] = static_cast<float>(seed * 1000 + static_cast<int>(idx));
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    writer.add_tensor_bytes("test.weight", DType::kF32, {16, floats / 16}, std::move(bytes));
    const Status status = writer.write(path);
    if (!status.is_ok()) throw std::runtime_error(status.message());
    return path;
}

}  // namespace tern::testing
