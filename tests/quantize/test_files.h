// What the quantize tests share: a folder of their own per test process under the build's test_tmp, and a
// deterministic token sequence for models with a synthetic vocabulary.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tern::testing {

// TERN_TEST_TMP/quantize/NAME-PID, created.
inline std::filesystem::path quantize_test_dir(const std::string& name) {
    const std::filesystem::path dir =
        std::filesystem::path(TERN_TEST_TMP) / "quantize" / (name + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir;
}

// Ids 3 + (i * stride) mod 1000: spread over the synthetic vocabulary, above its special tokens.
inline std::vector<int32_t> strided_tokens(int64_t count, int64_t stride) {
    std::vector<int32_t> ids;
    for (int64_t idx = 0; idx < count; ++idx) ids.push_back(static_cast<int32_t>(3 + (idx * stride) % 1000));
    return ids;
}

}  // namespace tern::testing
