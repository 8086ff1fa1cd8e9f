#include "formats/strict_json.h"

#include <fmt/format.h>

#include "base/printable.h"

#include <set>
#include <vector>

#include "base/mapped_file.h"

namespace tern {

Result<nlohmann::json> parse_strict_json(std::string_view text, const std::string& label) {
    using Event = nlohmann::json::parse_event_t;
    std::vector<std::set<std::string>> open_objects;
    std::string duplicate;
    auto track_keys = [&](int, Event event, nlohmann::json& parsed) {
        if (event == Event::object_start) {
            open_objects.emplace_back();
        } else if (event == Event::object_end) {
            if (!open_objects.empty()) open_objects.pop_back();
        } else if (event == Event::key && !open_objects.empty() && parsed.is_string()) {
            std::string key = parsed.get<std::string>();
            if (!open_objects.back().insert(key).second && duplicate.empty()) duplicate = std::move(key);
        }
        return true;
    };
    nlohmann::json value;
    try {
        value = nlohmann::json::parse(text.begin(), text.end(), track_keys);
    } catch (const nlohmann::json::exception& error) {
        return invalid_argument(fmt::format("{}: invalid JSON: {}", label, error.what()));
    } catch (const std::bad_alloc&) {
        return invalid_argument(fmt::format("{}: JSON too large to hold in memory", label));
    }
    if (!duplicate.empty()) {
        return invalid_argument(
            fmt::format("{}: invalid JSON: key '{}' appears twice in one object", label, printable(duplicate)));
    }
    return value;
}

Result<nlohmann::json> read_strict_json_file(const std::string& path, uint64_t max_bytes) {
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::open(path));
    if (file->size() > max_bytes) {
        return invalid_argument(fmt::format("{}: {} bytes is too large for a JSON file (limit {})", path,
                                            file->size(), max_bytes));
    }
    const char* text = reinterpret_cast<const char*>(file->data());
    return parse_strict_json(std::string_view(text == nullptr ? "" : text, file->size()), path);
}

}  // namespace tern
