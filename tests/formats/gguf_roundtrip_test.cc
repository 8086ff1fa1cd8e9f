#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "gguf_test_util.h"

namespace tern {
namespace {

TEST(GgufRoundTrip, MetadataOfEveryTypeSurvives) {
    const std::vector<uint8_t> bytes = testing::make_sample_writer().to_bytes();
    auto parsed = GgufFile::parse(bytes.data(), bytes.size(), "sample");
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    const GgufFile& file = *parsed.value();
    EXPECT_EQ(file.version(), 3u);
    EXPECT_EQ(file.get_string("general.architecture"), "llama");
    EXPECT_EQ(file.get_int("llama.block_count"), 2);
    EXPECT_EQ(file.get_int("sample.negative"), -7);
    EXPECT_EQ(file.get_float("sample.float"), 0.25);
    EXPECT_EQ(file.get_bool("sample.flag"), true);
    EXPECT_EQ(file.get_int("sample.type_u64"), 5);
    EXPECT_EQ(file.get_float("sample.type_f64"), 5.0);
    EXPECT_EQ(file.find("sample.type_i16")->type, GgufType::kI16);
    const auto* strings = file.get_array("sample.strings", GgufType::kString);
    ASSERT_NE(strings, nullptr);
    ASSERT_EQ(strings->size(), 3u);
    EXPECT_EQ((*strings)[2].string_value, "héllo");
    EXPECT_EQ(file.get_array("sample.strings", GgufType::kI32), nullptr);
    const auto* nested = file.get_array("sample.nested", GgufType::kArray);
    ASSERT_NE(nested, nullptr);
    ASSERT_EQ((*nested)[1].array.size(), 2u);
    EXPECT_EQ((*nested)[1].array[1].int_value, 11);
    EXPECT_EQ(file.find("missing.key"), nullptr);
}

TEST(GgufRoundTrip, TensorsAreAlignedAndZeroCopy) {
    const std::vector<uint8_t> bytes = testing::make_sample_writer().to_bytes();
    auto parsed = GgufFile::parse(bytes.data(), bytes.size(), "sample");
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    const GgufFile& file = *parsed.value();
    ASSERT_EQ(file.tensors().size(), 3u);
    const GgufTensorInfo* weights = file.find_tensor("weights.f32");
    ASSERT_NE(weights, nullptr);
    EXPECT_EQ(weights->dims, (std::vector<int64_t>{4, 2}));
    EXPECT_EQ(weights->num_bytes, 32);
    EXPECT_GE(weights->data, bytes.data());
    EXPECT_EQ((weights->data - bytes.data()) % 32, 0);
    float last = 0;
    std::memcpy(&last, weights->data + 28, 4);
    EXPECT_EQ(last, 7.0f);
    const GgufTensorInfo* q8 = file.find_tensor("weights.q8");
    EXPECT_EQ(q8->type, DType::kQ8_0);
    EXPECT_EQ(q8->num_bytes, 34);
    EXPECT_EQ(q8->offset % 32, 0u);
}

TEST(GgufRoundTrip, CustomAlignmentIsHonoured) {
    GgufWriter writer = testing::make_sample_writer();
    writer.set_alignment(64);
    const std::vector<uint8_t> bytes = writer.to_bytes();
    auto parsed = GgufFile::parse(bytes.data(), bytes.size(), "aligned");
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    EXPECT_EQ(parsed.value()->alignment(), 64u);
    for (const GgufTensorInfo& info : parsed.value()->tensors()) {
        EXPECT_EQ((info.data - bytes.data()) % 64, 0) << info.name;
    }
}

TEST(GgufRoundTrip, WritesAndMapsAFile) {
    std::filesystem::create_directories(TERN_TEST_TMP);
    const std::string path = std::string(TERN_TEST_TMP) + "/roundtrip.gguf";
    ASSERT_TRUE(testing::make_sample_writer().write(path).is_ok());
    auto opened = GgufFile::open(path);
    ASSERT_TRUE(opened.is_ok()) << opened.status().message();
    EXPECT_EQ(opened.value()->find_tensor("bias")->dims, (std::vector<int64_t>{3}));
    EXPECT_EQ(opened.value()->file_size(), std::filesystem::file_size(path));
}

// A server maps its model; rewriting that path (tern synth, tern quantize, or a test writing its model beside another
// test process) must not pull the pages from under it: written in place, the old mapping's reads past the truncation
// died with SIGBUS (seen as a "Bus error" in EngineEmbedding under ctest -j2). The new file replaces the old by rename.
TEST(GgufRoundTrip, RewritingAMappedFileLeavesTheMappingIntact) {
    std::filesystem::create_directories(TERN_TEST_TMP);
    const std::string path = std::string(TERN_TEST_TMP) + "/rewritten.gguf";
    ASSERT_TRUE(testing::make_sample_writer().write(path).is_ok());
    auto mapped = GgufFile::open(path);
    ASSERT_TRUE(mapped.is_ok()) << mapped.status().message();
    const std::vector<uint8_t> before = testing::make_sample_writer().to_bytes();
    GgufWriter smaller;
    smaller.add_string("general.architecture", "llama");
    ASSERT_TRUE(smaller.write(path).is_ok());
    EXPECT_EQ(std::filesystem::file_size(path), smaller.to_bytes().size());
    const GgufTensorInfo* tensor = mapped.value()->find_tensor("weights.q8");  // 34 bytes of 1, past the new end
    ASSERT_NE(tensor, nullptr);
    const uint8_t* expected = before.data() + mapped.value()->data_offset() + tensor->offset;
    ASSERT_EQ(expected[0], 1);
    EXPECT_EQ(std::memcmp(tensor->data, expected, 34), 0) << "the mapping no longer reads the old file";
    for (const auto& entry : std::filesystem::directory_iterator(TERN_TEST_TMP)) {
        EXPECT_EQ(entry.path().filename().string().find("rewritten.gguf.partial"), std::string::npos) << entry.path();
    }
}

TEST(GgufRoundTrip, MissingFileIsNotFound) {
    auto opened = GgufFile::open("/nonexistent/model.gguf");
    ASSERT_FALSE(opened.is_ok());
    EXPECT_EQ(opened.status().code(), StatusCode::kNotFound);
    EXPECT_NE(opened.status().message().find("/nonexistent/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace tern
