// The safetensors reader: valid files bind every tensor; malformed files give one clear error line naming the
// file, never a crash or an out-of-bounds read (run this binary under ASan + UBSan too). Sharded checkpoints.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "formats/safetensors.h"
#include "safetensors_builder.h"

namespace tern {
namespace {

using testing::raw_safetensors;
using testing::SafetensorsBuilder;

std::string parse_error(const std::vector<uint8_t>& bytes) {
    auto parsed = SafetensorsFile::parse(bytes.data(), bytes.size(), "bad.safetensors");
    return parsed.is_ok() ? std::string() : parsed.status().message();
}

void expect_error(const std::vector<uint8_t>& bytes, const std::string& needle) {
    const std::string message = parse_error(bytes);
    ASSERT_FALSE(message.empty()) << "expected an error containing '" << needle << "'";
    EXPECT_NE(message.find("bad.safetensors"), std::string::npos) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
}

// One F32 tensor "w" of shape [2, 2] whose entry is `entry` (raw JSON), with 16 data bytes.
std::vector<uint8_t> one_tensor(const std::string& entry, size_t num_data_bytes = 16) {
    return raw_safetensors("{\"w\":" + entry + "}", std::vector<uint8_t>(num_data_bytes, 0));
}

SafetensorsBuilder sample() {
    SafetensorsBuilder builder;
    builder.add_f32("a.weight", {2, 3}, {1, 2, 3, 4, 5, 6});
    builder.add_half("b.weight", "BF16", {4}, {0.5f, -1.0f, 2.0f, 3.0f});
    builder.add_half("c.weight", "F16", {1, 1, 2}, {0.25f, -0.75f});
    builder.add_f32("scalar", {}, {7.0f});
    builder.add_raw("empty", "F32", {0, 4}, {});
    builder.metadata("format", "pt");
    return builder;
}

TEST(SafetensorsFile, ParsesEveryTensorAndMetadata) {
    const std::vector<uint8_t> bytes = sample().bytes();
    auto parsed = SafetensorsFile::parse(bytes.data(), bytes.size(), "sample");
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    const SafetensorsFile& file = *parsed.value();
    ASSERT_EQ(file.tensors().size(), 5u);
    EXPECT_EQ(file.metadata().at("format"), "pt");
    const SafetensorsTensor* a = file.find("a.weight");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->type, DType::kF32);
    EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(a->num_elements, 6);
    EXPECT_EQ(a->num_bytes(), 24);
    float last = 0;
    std::memcpy(&last, a->data + 20, 4);
    EXPECT_EQ(last, 6.0f);
    const SafetensorsTensor* b = file.find("b.weight");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->type, DType::kBF16);
    uint16_t half = 0;
    std::memcpy(&half, b->data + 2, 2);
    EXPECT_EQ(bf16_to_fp32(half), -1.0f);
    EXPECT_EQ(file.find("c.weight")->type, DType::kF16);
    EXPECT_EQ(file.find("scalar")->num_elements, 1);
    EXPECT_EQ(file.find("empty")->num_elements, 0);
    EXPECT_EQ(file.find("missing"), nullptr);
}

TEST(SafetensorsCorrupt, EveryTruncationIsAnError) {
    const std::vector<uint8_t> whole = sample().bytes();
    for (size_t length = 0; length < whole.size(); ++length) {
        const std::vector<uint8_t> prefix(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(length));
        const std::string message = parse_error(prefix);
        ASSERT_FALSE(message.empty()) << "a file cut to " << length << " bytes parsed";
        EXPECT_NE(message.find("bad.safetensors"), std::string::npos) << message;
    }
    expect_error({1, 2, 3}, "too short");
}

TEST(SafetensorsCorrupt, HeaderLengthBeyondTheFile) {
    expect_error(raw_safetensors("{}", {}, 3), "runs past the end of the file");
    expect_error(raw_safetensors("{}", {}, uint64_t{1} << 62), "limit");
}

TEST(SafetensorsCorrupt, BadJson) {
    expect_error(raw_safetensors("{\"w\": {", {}), "invalid JSON");
    expect_error(raw_safetensors("not json", {}), "invalid JSON");
    expect_error(raw_safetensors("[1, 2]", {}), "must be a JSON object");
    expect_error(raw_safetensors("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, "
                                 "\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
                                 std::vector<uint8_t>(8, 0)),
                 "'w' appears twice");
    expect_error(raw_safetensors("{\"__metadata__\": {\"format\": 3}}", {}), "__metadata__ value of 'format'");
    expect_error(raw_safetensors("{\"w\": 5}", {}), "must be an object");
}

TEST(SafetensorsCorrupt, UnknownOrUnsupportedDtype) {
    expect_error(one_tensor(R"({"dtype": "Q9", "shape": [2, 2], "data_offsets": [0, 16]})"), "unknown dtype 'Q9'");
    expect_error(one_tensor(R"({"dtype": "I64", "shape": [2, 1], "data_offsets": [0, 16]})"), "dtype I64");
    expect_error(one_tensor(R"({"shape": [2, 2], "data_offsets": [0, 16]})"), "no string 'dtype'");
}

TEST(SafetensorsCorrupt, BadShapes) {
    expect_error(one_tensor(R"({"dtype": "F32", "shape": [-2, 2], "data_offsets": [0, 16]})"), "negative");
    expect_error(one_tensor(R"({"dtype": "F32", "shape": [2.5, 2], "data_offsets": [0, 16]})"), "not a non-negative");
    expect_error(one_tensor(R"({"dtype": "F32", "shape": "2x2", "data_offsets": [0, 16]})"), "no 'shape' array");
    expect_error(one_tensor(R"({"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 16]})"),
                 "overflows");
    expect_error(one_tensor(R"({"dtype": "F32", "shape": [1152921504606846976, 4], "data_offsets": [0, 16]})"),
                 "overflows");
}

TEST(SafetensorsCorrupt, OffsetsOutOfRange) {
    expect_error(one_tensor(R"({"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 32]})"), "outside the 16-byte");
    expect_error(one_tensor(R"({"dtype": "F32", "shape": [2, 2], "data_offsets": [16, 0]})"), "end before they begin");
    expect_error(one_tensor(R"({"dtype": "F32", "shape": [2, 2], "data_offsets": [0]})"), "two non-negative");
    expect_error(one_tensor(R"({"dtype": "F32", "shape": [2, 2], "data_offsets": [-4, 12]})"), "two non-negative");
}

TEST(SafetensorsCorrupt, SizeMismatch) {
    expect_error(one_tensor(R"({"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]})"), "need 16");
    expect_error(one_tensor(R"({"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 16]})"), "need 8");
}

TEST(SafetensorsCorrupt, OverlappingTensors) {
    const std::string header = R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                                   "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})";
    expect_error(raw_safetensors(header, std::vector<uint8_t>(16, 0)), "overlap");
    const std::string nested = R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                                   "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
                                   "c": {"dtype": "F32", "shape": [1], "data_offsets": [12, 16]}})";
    expect_error(raw_safetensors(nested, std::vector<uint8_t>(16, 0)), "overlap");
}

// Random damage to a valid header or its length must never crash: each file parses or fails with a one-line message
// naming the file.
TEST(SafetensorsCorrupt, RandomByteDamageNeverCrashes) {
    const std::vector<uint8_t> whole = sample().bytes();
    std::mt19937 rng(1234);
    for (int trial = 0; trial < 2000; ++trial) {
        std::vector<uint8_t> damaged = whole;
        const int num_flips = 1 + static_cast<int>(rng() % 3);
        for (int flip = 0; flip < num_flips; ++flip) {
            const size_t pos = rng() % std::min<size_t>(damaged.size(), 400);
            damaged[pos] = static_cast<uint8_t>(rng());
        }
        auto parsed = SafetensorsFile::parse(damaged.data(), damaged.size(), "damaged");
        if (!parsed.is_ok()) {
            const std::string& message = parsed.status().message();
            EXPECT_NE(message.find("damaged"), std::string::npos) << message;
            EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
            continue;
        }
        for (const SafetensorsTensor& tensor : parsed.value()->tensors()) {
            ASSERT_LE(tensor.end, damaged.size());
            ASSERT_GE(tensor.data, damaged.data());
            ASSERT_LE(tensor.data + tensor.num_bytes(), damaged.data() + damaged.size());
        }
    }
}

// Sharded checkpoints: an index maps each tensor to its shard file.
class SafetensorsCheckpointTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = testing::scratch_dir(testing::current_test_name());
        SafetensorsBuilder first;
        first.add_f32("a", {2}, {1, 2});
        testing::write_bytes(dir_ / "model-00001-of-00002.safetensors", first.bytes());
        SafetensorsBuilder second;
        second.add_f32("b", {1}, {3});
        testing::write_bytes(dir_ / "model-00002-of-00002.safetensors", second.bytes());
    }

    void write_index(const nlohmann::json& weight_map) {
        testing::write_text(dir_ / "model.safetensors.index.json",
                            nlohmann::json{{"metadata", {{"total_size", 12}}}, {"weight_map", weight_map}}.dump());
    }

    std::string open_error() {
        auto opened = SafetensorsCheckpoint::open_dir(dir_.string());
        return opened.is_ok() ? std::string() : opened.status().message();
    }

    std::filesystem::path dir_;
};

TEST_F(SafetensorsCheckpointTest, OpensEveryShard) {
    write_index({{"a", "model-00001-of-00002.safetensors"}, {"b", "model-00002-of-00002.safetensors"}});
    auto opened = SafetensorsCheckpoint::open_dir(dir_.string());
    ASSERT_TRUE(opened.is_ok()) << opened.status().message();
    ASSERT_EQ(opened.value()->entries().size(), 2u);
    const SafetensorsCheckpoint::Entry* b = opened.value()->find("b");
    ASSERT_NE(b, nullptr);
    EXPECT_NE(b->file->path().find("model-00002-of-00002.safetensors"), std::string::npos);
    float value = 0;
    std::memcpy(&value, b->tensor->data, 4);
    EXPECT_EQ(value, 3.0f);
}

TEST_F(SafetensorsCheckpointTest, MissingShardIsAnError) {
    write_index({{"a", "model-00001-of-00002.safetensors"}, {"c", "model-00003-of-00003.safetensors"}});
    const std::string message = open_error();
    EXPECT_NE(message.find("shard 'model-00003-of-00003.safetensors'"), std::string::npos) << message;
    EXPECT_NE(message.find("missing"), std::string::npos) << message;
    EXPECT_NE(message.find("model.safetensors.index.json"), std::string::npos) << message;
}

TEST_F(SafetensorsCheckpointTest, TensorListedButAbsentIsAnError) {
    write_index({{"a", "model-00001-of-00002.safetensors"}, {"b", "model-00001-of-00002.safetensors"}});
    const std::string message = open_error();
    EXPECT_NE(message.find("lists tensor 'b' in shard 'model-00001-of-00002.safetensors'"), std::string::npos)
        << message;
}

TEST_F(SafetensorsCheckpointTest, BadIndexes) {
    write_index({{"a", "../model-00001-of-00002.safetensors"}});
    EXPECT_NE(open_error().find("must be a file name in the same folder"), std::string::npos) << open_error();
    write_index({{"a", 7}});
    EXPECT_NE(open_error().find("must be a file name"), std::string::npos) << open_error();
    testing::write_text(dir_ / "model.safetensors.index.json", "{\"weight_map\": [}");
    EXPECT_NE(open_error().find("invalid JSON"), std::string::npos) << open_error();
    testing::write_text(dir_ / "model.safetensors.index.json", "{\"metadata\": {}}");
    EXPECT_NE(open_error().find("no 'weight_map'"), std::string::npos) << open_error();
}

TEST_F(SafetensorsCheckpointTest, CorruptShardNamesTheShard) {
    testing::write_bytes(dir_ / "model-00002-of-00002.safetensors", raw_safetensors("{\"b\": 1", {}));
    write_index({{"a", "model-00001-of-00002.safetensors"}, {"b", "model-00002-of-00002.safetensors"}});
    const std::string message = open_error();
    EXPECT_NE(message.find("model-00002-of-00002.safetensors"), std::string::npos) << message;
    EXPECT_NE(message.find("invalid JSON"), std::string::npos) << message;
}

TEST_F(SafetensorsCheckpointTest, SingleFileAndEmptyFolder) {
    EXPECT_NE(open_error().find("no model.safetensors or model.safetensors.index.json"), std::string::npos);
    SafetensorsBuilder single;
    single.add_f32("x", {1}, {5});
    testing::write_bytes(dir_ / "model.safetensors", single.bytes());
    auto opened = SafetensorsCheckpoint::open_dir(dir_.string());
    ASSERT_TRUE(opened.is_ok()) << opened.status().message();
    EXPECT_NE(opened.value()->find("x"), nullptr);
}

}  // namespace
}  // namespace tern
