#include "route/config_reader.h"

#include <fmt/format.h>

#include <algorithm>

namespace tern::route {

std::string_view describe(toml::node_type type) {
    switch (type) {
        case toml::node_type::table: return "a table";
        case toml::node_type::array: return "an array";
        case toml::node_type::string: return "a string";
        case toml::node_type::integer: return "an integer";
        case toml::node_type::floating_point: return "a number";
        case toml::node_type::boolean: return "a boolean";
        case toml::node_type::date: return "a date";
        case toml::node_type::time: return "a time";
        case toml::node_type::date_time: return "a date-time";
        case toml::node_type::none: break;
    }
    return "nothing";
}

void ConfigReader::fail(std::string_view path, std::string_view message) {
    if (failed()) return;
    status_ = invalid_argument(fmt::format("{}: {}: {}", source_, path, message));
}

std::string ConfigReader::join(std::string_view path, std::string_view key) {
    const bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
    const std::string part = bare ? std::string(key) : fmt::format("\"{}\"", key);
    return path.empty() ? part : fmt::format("{}.{}", path, part);
}

std::string ConfigReader::index(std::string_view path, size_t idx) { return fmt::format("{}[{}]", path, idx); }

void ConfigReader::allow_only(const toml::table& table, std::string_view path,
                              std::initializer_list<std::string_view> allowed) {
    for (const auto& [key, value] : table) {
        if (std::find(allowed.begin(), allowed.end(), key.str()) != allowed.end()) continue;
        fail(join(path, key.str()), fmt::format("unknown key; expected one of: {}", fmt::join(allowed, ", ")));
    }
}

void ConfigReader::read(const toml::table& table, std::string_view path, std::string_view key, std::string& out) {
    const toml::node* node = table.get(key);
    if (node == nullptr) return;
    if (const auto* value = node->as_string()) {
        out = value->get();
        return;
    }
    fail(join(path, key), fmt::format("expected a string, got {}", describe(node->type())));
}

void ConfigReader::read(const toml::table& table, std::string_view path, std::string_view key, bool& out) {
    const toml::node* node = table.get(key);
    if (node == nullptr) return;
    if (const auto* value = node->as_boolean()) {
        out = value->get();
        return;
    }
    fail(join(path, key), fmt::format("expected true or false, got {}", describe(node->type())));
}

void ConfigReader::read(const toml::table& table, std::string_view path, std::string_view key, int64_t& out,
                        int64_t min, int64_t max) {
    const toml::node* node = table.get(key);
    if (node == nullptr) return;
    const auto* value = node->as_integer();
    if (value == nullptr) return fail(join(path, key), fmt::format("expected an integer, got {}", describe(node->type())));
    if (value->get() < min || value->get() > max) {
        return fail(join(path, key), fmt::format("{} is out of range; expected {} to {}", value->get(), min, max));
    }
    out = value->get();
}

void ConfigReader::read(const toml::table& table, std::string_view path, std::string_view key, int& out, int min,
                        int max) {
    int64_t wide = out;
    read(table, path, key, wide, min, max);
    out = static_cast<int>(wide);
}

void ConfigReader::read(const toml::table& table, std::string_view path, std::string_view key, double& out,
                        double min, double max) {
    const toml::node* node = table.get(key);
    if (node == nullptr) return;
    std::optional<double> number;
    if (const auto* integer = node->as_integer()) number = static_cast<double>(integer->get());
    if (const auto* floating = node->as_floating_point()) number = floating->get();
    if (!number) return fail(join(path, key), fmt::format("expected a number, got {}", describe(node->type())));
    if (!(*number >= min && *number <= max)) {
        return fail(join(path, key), fmt::format("{} is out of range; expected {} to {}", *number, min, max));
    }
    out = *number;
}

void ConfigReader::read(const toml::table& table, std::string_view path, std::string_view key,
                        std::vector<std::string>& out) {
    const toml::node* node = table.get(key);
    if (node == nullptr) return;
    const toml::array* list = node->as_array();
    std::vector<std::string> strings;
    for (size_t idx = 0; list != nullptr && idx < list->size(); ++idx) {
        if (const auto* text = (*list)[idx].as_string()) strings.push_back(text->get());
    }
    if (list == nullptr || strings.size() != list->size()) {
        return fail(join(path, key), "expected a list of strings, e.g. [\"a\", \"b\"]");
    }
    out = std::move(strings);
}

}  // namespace tern::route
