// Corrupt model files given to the CLI: one clear error line and exit code 1, never a crash.
// Runs in the default suite and again under ASan + UBSan (label `sanitize`).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "run_command.h"

namespace tern {
namespace {

const std::string kStories = std::string(TERN_SHARED_DIR) + "/models/stories260K/stories260K-f32.gguf";

std::vector<char> read_all(const std::string& path) {
    std::ifstream stream(path, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(stream), {});
}

std::string write_bytes(const std::string& name, const std::vector<char>& bytes) {
    const std::string path = testing::temp_dir() + "/" + name;
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
}

void expect_clean_failure(const testing::CommandResult& result, const std::string& path) {
    EXPECT_EQ(result.signal, 0) << "crashed: " << result.err;
    EXPECT_EQ(result.exit_code, 1) << result.err;
    EXPECT_EQ(result.err.rfind("tern: error: ", 0), 0u) << result.err;
    EXPECT_NE(result.err.find(path), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << "one line: " << result.err;
}

TEST(CorruptFile, TruncatedAtSixtyFourOffsets) {
    const std::vector<char> whole = read_all(kStories);
    ASSERT_GT(whole.size(), 1000u);
    for (int cut_idx = 0; cut_idx < 64; ++cut_idx) {
        const size_t cut = whole.size() * static_cast<size_t>(cut_idx) / 64;
        const std::string path = write_bytes("cut.gguf", std::vector<char>(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut)));
        SCOPED_TRACE("cut at " + std::to_string(cut));
        expect_clean_failure(testing::run_tern("info -m " + path), path);
        if (cut_idx % 8 == 0) expect_clean_failure(testing::run_tern("generate -n 2 -m " + path + " -p hi"), path);
    }
}

TEST(CorruptFile, CorruptedHeaderFields) {
    const std::vector<char> whole = read_all(kStories);
    struct Patch {
        const char* what;
        size_t offset;
        uint64_t value;
        size_t width;
    };
    // Offsets of the fixed header: magic 0, version 4, tensor count 8, metadata count 16, first key length 24.
    const Patch patches[] = {{"magic", 0, 0x12345678u, 4},
                             {"version", 4, 99, 4},
                             {"tensor count", 8, 1ull << 40, 8},
                             {"metadata count", 16, 1ull << 40, 8},
                             {"first key length", 24, 1ull << 50, 8},
                             {"first value type", 24 + 8 + 20, 4242, 4}};
    for (const Patch& patch : patches) {
        SCOPED_TRACE(patch.what);
        std::vector<char> bytes = whole;
        std::memcpy(bytes.data() + patch.offset, &patch.value, patch.width);
        const std::string path = write_bytes("patched.gguf", bytes);
        expect_clean_failure(testing::run_tern("info -m " + path), path);
    }
}

TEST(CorruptFile, MissingFileIsOneLine) {
    expect_clean_failure(testing::run_tern("info -m /nonexistent/x.gguf"), "/nonexistent/x.gguf");
}

}  // namespace
}  // namespace tern
