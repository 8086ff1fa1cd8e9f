// Malformed GGUF input must produce one clear error, never a crash or an out-of-bounds read
// (this suite also runs under AddressSanitizer + UBSan in CI).
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <random>
#include <string>

#include "formats/gguf.h"
#include "gguf_test_util.h"

namespace tern {
namespace {

// Appends raw little-endian fields, to build files with exactly one thing wrong.
class Bytes {
public:
    Bytes& u32(uint32_t value) { return raw(&value, 4); }
    Bytes& u64(uint64_t value) { return raw(&value, 8); }
    Bytes& u8(uint8_t value) { return raw(&value, 1); }
    Bytes& str(const std::string& text) { return u64(text.size()).raw(text.data(), text.size()); }
    Bytes& raw(const void* data, size_t size) {
        const auto* bytes = static_cast<const uint8_t*>(data);
        data_.insert(data_.end(), bytes, bytes + size);
        return *this;
    }
    Bytes& header(uint64_t num_tensors, uint64_t num_kv) { return raw("GGUF", 4).u32(3).u64(num_tensors).u64(num_kv); }
    Bytes& pad_to(size_t alignment) {
        data_.resize((data_.size() + alignment - 1) / alignment * alignment, 0);
        return *this;
    }
    const std::vector<uint8_t>& data() const { return data_; }

private:
    std::vector<uint8_t> data_;
};

std::string parse_error(const std::vector<uint8_t>& bytes) {
    auto parsed = GgufFile::parse(bytes.data(), bytes.size(), "bad.gguf");
    return parsed.is_ok() ? std::string() : parsed.status().message();
}

// Zero bytes are appended so that the sanity bounds on counts pass and the targeted field is what fails.
void expect_error(const Bytes& bytes, const std::string& needle, size_t num_padding = 256) {
    std::vector<uint8_t> padded = bytes.data();
    padded.resize(padded.size() + num_padding, 0);
    const std::string message = parse_error(padded);
    ASSERT_FALSE(message.empty()) << "expected an error containing '" << needle << "'";
    EXPECT_NE(message.find("bad.gguf"), std::string::npos) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
}

// A tensor info for a 32-element f32 vector at `offset`.
Bytes& tensor_info(Bytes& bytes, const std::string& name, uint32_t type = 0, uint64_t offset = 0) {
    return bytes.str(name).u32(1).u64(32).u32(type).u64(offset);
}

TEST(GgufCorrupt, TruncationAtSixtyFourOffsetsIsAnError) {
    const std::vector<uint8_t> whole = testing::make_sample_writer().to_bytes();
    auto parsed = GgufFile::parse(whole.data(), whole.size(), "whole");
    ASSERT_TRUE(parsed.is_ok());
    uint64_t data_end = 0;
    for (const GgufTensorInfo& info : parsed.value()->tensors()) {
        data_end = std::max<uint64_t>(data_end, parsed.value()->data_offset() + info.offset + info.num_bytes);
    }
    for (int cut_idx = 0; cut_idx < 64; ++cut_idx) {
        const size_t cut = data_end * cut_idx / 64;
        // A fresh heap copy of exactly `cut` bytes, so ASan sees any read past the end.
        std::vector<uint8_t> truncated(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut));
        const std::string message = parse_error(truncated);
        EXPECT_FALSE(message.empty()) << "cut at " << cut << " was accepted";
        EXPECT_NE(message.find("bad.gguf"), std::string::npos) << message;
    }
}

TEST(GgufCorrupt, HeaderFields) {
    expect_error(Bytes().raw("GGUX", 4).u32(3).u64(0).u64(0), "not a GGUF file");
    expect_error(Bytes().raw("GGUF", 4).u32(7).u64(0).u64(0), "unsupported GGUF version 7");
    expect_error(Bytes().header(1ull << 60, 0), "tensor count");
    expect_error(Bytes().header(0, 1ull << 62), "metadata count");
}

TEST(GgufCorrupt, MetadataValues) {
    expect_error(Bytes().header(0, 1).u64(1ull << 40), "length 1099511627776");
    expect_error(Bytes().header(0, 1).str("k").u32(99), "unknown value type 99");
    expect_error(Bytes().header(0, 1).str("k").u32(9).u32(77).u64(0), "unknown element type 77");
    expect_error(Bytes().header(0, 1).str("k").u32(9).u32(4).u64(1ull << 50), "array length");
    expect_error(Bytes().header(0, 1).str("k").u32(7).u8(2), "bool value 2");
    expect_error(Bytes().header(0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(1), "duplicate metadata key 'k'");
    expect_error(Bytes().header(0, 1).str("general.alignment").u32(4).u32(24), "power of two");
    expect_error(Bytes().header(0, 1).str("general.alignment").u32(8).str("x"), "must be a u32");
    Bytes deep = Bytes().header(0, 1).str("k").u32(9);
    for (int level = 0; level < 20; ++level) deep.u32(9).u64(1);
    expect_error(deep, "nested deeper");
}

TEST(GgufCorrupt, TensorInfos) {
    expect_error(Bytes().header(1, 0).str("t").u32(0), "0 dimensions");
    expect_error(Bytes().header(1, 0).str("t").u32(5), "5 dimensions");
    expect_error(Bytes().header(1, 0).str("t").u32(3).u64(1ull << 40).u64(1ull << 40).u64(1ull << 40), "overflows");
    expect_error(Bytes().header(1, 0).str("t").u32(1).u64(1ull << 63), "overflows");
    Bytes unknown_type = Bytes().header(1, 0);
    expect_error(tensor_info(unknown_type, "t", 1234), "unknown type id 1234");
    expect_error(Bytes().header(1, 0).str("q").u32(1).u64(33).u32(8).u64(0), "not a multiple");
    Bytes duplicate = Bytes().header(2, 0);
    tensor_info(duplicate, "t");
    expect_error(tensor_info(duplicate, "t", 0, 128), "duplicate tensor name 't'");
}

TEST(GgufCorrupt, TensorData) {
    Bytes misaligned = Bytes().header(1, 0);
    tensor_info(misaligned, "t", 0, 4).pad_to(32);
    misaligned.raw(std::string(256, '\0').data(), 256);
    expect_error(misaligned, "not aligned", 0);

    Bytes outside = Bytes().header(1, 0);
    tensor_info(outside, "t", 0, 64).pad_to(32);
    outside.raw(std::string(128, '\0').data(), 128);  // 64 + 128 bytes of f32[32] does not fit
    expect_error(outside, "outside the data section", 0);

    Bytes fits = Bytes().header(1, 0);
    tensor_info(fits, "t", 0, 0).pad_to(32);
    fits.raw(std::string(128, '\0').data(), 128);
    EXPECT_TRUE(parse_error(fits.data()).empty()) << parse_error(fits.data());
}

TEST(GgufCorrupt, EmptyInput) {
    EXPECT_NE(parse_error({}).find("truncated"), std::string::npos);
}

// Seeded random damage to a complete file: bytes flipped, 4- and 8-byte fields set to extreme values, the file cut
// short. Each result is a one-line error naming the file, or a file whose every value and tensor byte can be read
// (under ASan this suite would report a read outside the input).
TEST(GgufCorrupt, SeededRandomDamageIsAnErrorOrAReadableFile) {
    const std::vector<uint8_t> whole = testing::make_sample_writer().to_bytes();
    std::mt19937 rng(20261201);
    const auto pick = [&](size_t low, size_t high) { return std::uniform_int_distribution<size_t>(low, high)(rng); };
    const uint64_t extremes[] = {0, 1, 0xFF, 0xFFFFFFFFull, 1ull << 31, 1ull << 40, ~0ull, 1ull << 63};
    int num_errors = 0;
    for (int case_idx = 0; case_idx < 2000; ++case_idx) {
        std::vector<uint8_t> bytes = whole;
        switch (case_idx % 3) {
            case 0:
                for (size_t flip = pick(1, 8); flip > 0; --flip) {
                    bytes[pick(0, bytes.size() - 1)] = static_cast<uint8_t>(pick(0, 255));
                }
                break;
            case 1: {
                const size_t width = pick(0, 1) == 0 ? 4 : 8;
                const uint64_t value = extremes[pick(0, std::size(extremes) - 1)];
                std::memcpy(bytes.data() + pick(0, bytes.size() - width), &value, width);
                break;
            }
            default:
                bytes.resize(pick(0, bytes.size() - 1));
        }
        SCOPED_TRACE("case " + std::to_string(case_idx));
        auto parsed = GgufFile::parse(bytes.data(), bytes.size(), "bad.gguf");
        if (!parsed.is_ok()) {
            ++num_errors;
            const std::string& message = parsed.status().message();
            ASSERT_NE(message.find("bad.gguf"), std::string::npos) << message;
            ASSERT_EQ(message.find('\n'), std::string::npos) << message;
            continue;
        }
        const GgufFile& file = *parsed.value();
        size_t touched = 0;
        for (const auto& [key, value] : file.metadata()) {
            touched += key.size() + value.string_value.size() + value.array.size();
        }
        for (const GgufTensorInfo& tensor : file.tensors()) {
            ASSERT_GE(tensor.num_bytes, 0);
            ASSERT_LE(tensor.data + tensor.num_bytes, bytes.data() + bytes.size()) << tensor.name;
            for (int64_t idx = 0; idx < tensor.num_bytes; ++idx) touched += tensor.data[idx];
        }
        volatile size_t sink = touched;  // every byte above was read, so ASan sees any read outside the input
        (void)sink;
    }
    // Most damage is caught; some lands in values (a string's bytes, tensor data) that any file may hold.
    EXPECT_GT(num_errors, 500);
}

}  // namespace
}  // namespace tern
