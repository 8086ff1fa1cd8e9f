// Builds safetensors files and Hugging Face folders byte by byte for the reader and converter tests.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/fp16.h"

namespace tern::testing {

// The 8-byte little-endian length, the header text as given, then `data`.
inline std::vector<uint8_t> raw_safetensors(const std::string& header, const std::vector<uint8_t>& data,
                                            uint64_t declared_length = UINT64_MAX) {
    const uint64_t length = declared_length == UINT64_MAX ? header.size() : declared_length;
    std::vector<uint8_t> bytes;
    for (int byte_idx = 0; byte_idx < 8; ++byte_idx) bytes.push_back(static_cast<uint8_t>(length >> (8 * byte_idx)));
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.insert(bytes.end(), data.begin(), data.end());
    return bytes;
}

// Tensors laid out back to back in the order added.
class SafetensorsBuilder {
public:
    SafetensorsBuilder& add_f32(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& values) {
        std::vector<uint8_t> bytes(values.size() * 4);
        std::memcpy(bytes.data(), values.data(), bytes.size());
        return add_raw(name, "F32", std::move(shape), bytes);
    }
    SafetensorsBuilder& add_half(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
                                 const std::vector<float>& values) {
        std::vector<uint8_t> bytes(values.size() * 2);
        for (size_t idx = 0; idx < values.size(); ++idx) {
            const uint16_t half = dtype == "F16" ? fp32_to_fp16(values[idx]) : fp32_to_bf16(values[idx]);
            std::memcpy(bytes.data() + idx * 2, &half, 2);
        }
        return add_raw(name, dtype, std::move(shape), bytes);
    }
    SafetensorsBuilder& add_raw(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
                                const std::vector<uint8_t>& bytes) {
        header_[name] = {
            {"dtype", dtype}, {"shape", shape}, {"data_offsets", {data_.size(), data_.size() + bytes.size()}}};
        data_.insert(data_.end(), bytes.begin(), bytes.end());
        return *this;
    }
    SafetensorsBuilder& metadata(const std::string& key, const std::string& value) {
        header_["__metadata__"][key] = value;
        return *this;
    }

    nlohmann::json& header() { return header_; }
    std::vector<uint8_t> bytes() const { return raw_safetensors(header_.dump(), data_); }

private:
    nlohmann::json header_ = nlohmann::json::object();
    std::vector<uint8_t> data_;
};

inline void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
    write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

// "Suite.Test", to name a test's scratch folder.
inline std::string current_test_name() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string(info->test_suite_name()) + "." + info->name();
}

// A fresh, empty folder under the test scratch directory.
inline std::filesystem::path scratch_dir(const std::string& name) {
    const std::filesystem::path dir = std::filesystem::path(TERN_TEST_TMP) / "convert" / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

}  // namespace tern::testing
