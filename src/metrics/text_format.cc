#include "metrics/text_format.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "base/check.h"

namespace tern::metrics {
namespace {

bool is_name_start(char c, bool allow_colon) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
}

bool is_name(std::string_view name, bool allow_colon) {
    if (name.empty() || !is_name_start(name[0], allow_colon)) return false;
    for (char c : name) {
        if (!is_name_start(c, allow_colon) && !(c >= '0' && c <= '9')) return false;
    }
    return true;
}

void append_escaped(std::string& out, std::string_view text, bool escape_quote) {
    for (char c : text) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '"' && escape_quote) {
            out += "\\\"";
        } else {
            out += c;
        }
    }
}

}  // namespace

bool is_valid_metric_name(std::string_view name) { return is_name(name, /*allow_colon=*/true); }

bool is_valid_label_name(std::string_view name) {
    return is_name(name, /*allow_colon=*/false) && !name.starts_with("__");
}

std::string escape_label_value(std::string_view value) {
    std::string out;
    append_escaped(out, value, /*escape_quote=*/true);
    return out;
}

std::string escape_help(std::string_view help) {
    std::string out;
    append_escaped(out, help, /*escape_quote=*/false);
    return out;
}

std::string format_value(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    // Above 2^53 a double no longer holds every integer, so exponent form says no more than it knows.
    if (value == std::trunc(value) && std::fabs(value) < 0x1p53) return fmt::format("{}", static_cast<int64_t>(value));
    return fmt::format("{}", value);  // fmt's default is the shortest round-trip form
}

void append_sample(std::string& out, std::string_view name, std::span<const std::string> label_names,
                   std::span<const std::string> label_values, std::string_view le, double value) {
    TERN_CHECK(label_names.size() == label_values.size()) << "label values do not match label names for " << name;
    out += name;
    if (!label_names.empty() || !le.empty()) {
        out += '{';
        for (size_t label_idx = 0; label_idx < label_names.size(); ++label_idx) {
            if (label_idx > 0) out += ',';
            out += label_names[label_idx];
            out += "=\"";
            append_escaped(out, label_values[label_idx], /*escape_quote=*/true);
            out += '"';
        }
        if (!le.empty()) {
            if (!label_names.empty()) out += ',';
            out += "le=\"";
            out += le;
            out += '"';
        }
        out += '}';
    }
    out += ' ';
    out += format_value(value);
    out += '\n';
}

}  // namespace tern::metrics
