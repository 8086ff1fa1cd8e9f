#include "metrics/text_parse.h"

#include <algorithm>
#include <charconv>

namespace tern::metrics {
namespace {

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
    return text;
}

// "name{labels} value [timestamp]" -> name and value.
bool parse_sample(std::string_view line, std::string_view* name, double* value) {
    const size_t name_end = line.find_first_of("{ \t");
    if (name_end == std::string_view::npos) return false;
    *name = line.substr(0, name_end);
    size_t rest = name_end;
    if (line[name_end] == '{') {
        rest = line.find('}', name_end);  // label values may not contain '}' in practice
        if (rest == std::string_view::npos) return false;
        ++rest;
    }
    std::string_view value_text = trim(line.substr(rest));
    value_text = value_text.substr(0, value_text.find_first_of(" \t"));
    const auto [end, error] = std::from_chars(value_text.data(), value_text.data() + value_text.size(), *value);
    return error == std::errc() && end == value_text.data() + value_text.size();
}

}  // namespace

void for_each_sample(std::string_view text, const std::function<void(std::string_view name, double value)>& visit) {
    size_t start = 0;
    while (start < text.size()) {
        const size_t newline = std::min(text.find('\n', start), text.size());
        const std::string_view line = trim(text.substr(start, newline - start));
        start = newline + 1;
        if (line.empty() || line.front() == '#') continue;
        std::string_view name;
        double value = 0;
        if (parse_sample(line, &name, &value)) visit(name, value);
    }
}

}  // namespace tern::metrics
