// JSON parsing for file formats and configs: nlohmann's exceptions stop here and become a Status, and a key
// repeated within one object is an error (nlohmann would silently keep the last value).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tern {

// Parses `text`; errors start with `label` (the file name) and say what is wrong and where.
Result<nlohmann::json> parse_strict_json(std::string_view text, const std::string& label);

// Reads the whole file at `path` (at most `max_bytes`) and parses it as above.
Result<nlohmann::json> read_strict_json_file(const std::string& path, uint64_t max_bytes = 256u << 20);

// A non-negative integer, whether nlohmann holds it as signed or unsigned (parsed text gives unsigned, values built
// in code signed); nullopt for anything else, including floats such as 2.0.
inline std::optional<uint64_t> json_to_uint(const nlohmann::json& value) {
    if (value.is_number_unsigned()) return value.get<uint64_t>();
    if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
    return std::nullopt;
}

}  // namespace tern
