// Shared helpers of the chat tests: reading the committed data that scripts/gen-chat-golden produced.
#pragma once

#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace tern::chat::test_data {

inline std::string data_path(const std::string& name) { return std::string(TERN_CHAT_DATA_DIR) + "/" + name; }

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

inline nlohmann::ordered_json read_json(const std::string& name) {
    return nlohmann::ordered_json::parse(read_file(data_path(name)));
}

// "2024-09-05T12:00:00" as a broken-down time.
inline std::tm parse_time(const std::string& text) {
    std::tm when{};
    std::istringstream in(text);
    in >> std::get_time(&when, "%Y-%m-%dT%H:%M:%S");
    return when;
}

}  // namespace tern::chat::test_data
