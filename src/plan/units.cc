#include "plan/units.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

namespace tern::plan {
namespace {

std::string lower(std::string_view text) {
    std::string out;
    for (char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (!std::isspace(byte)) out += static_cast<char>(std::tolower(byte));
    }
    return out;
}

// Parses the leading number of `text`; `rest` receives what follows it.
bool parse_leading_number(const std::string& text, double* value, std::string* rest) {
    if (text.empty()) return false;
    char* end = nullptr;
    *value = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || !std::isfinite(*value)) return false;
    *rest = std::string(end);
    return true;
}

}  // namespace

Result<int64_t> parse_memory_size(std::string_view text) {
    const std::string normalized = lower(text);
    double value = 0;
    std::string unit;
    if (!parse_leading_number(normalized, &value, &unit)) {
        return invalid_argument(
            fmt::format("memory size '{}' is not a number (examples: 24, 24GB, 24GiB, 512MiB)", text));
    }
    constexpr double kKiB = 1024.0;
    const std::pair<const char*, double> units[] = {
        {"", 1e9},
        {"g", 1e9},
        {"gb", 1e9},
        {"gib", kKiB * kKiB * kKiB},
        {"m", 1e6},
        {"mb", 1e6},
        {"mib", kKiB * kKiB},
        {"t", 1e12},
        {"tb", 1e12},
        {"tib", kKiB * kKiB * kKiB * kKiB},
        {"b", 1},
    };
    double scale = 0;
    for (const auto& [name, factor] : units) {
        if (unit == name) scale = factor;
    }
    if (scale == 0) {
        return invalid_argument(
            fmt::format("memory size '{}' has unknown unit '{}' (use GB, GiB, MB, MiB, TB or TiB)", text, unit));
    }
    if (value <= 0 || value * scale > 1e18) {
        return invalid_argument(fmt::format("memory size '{}' must be positive and below an exabyte", text));
    }
    return static_cast<int64_t>(std::llround(value * scale));
}

Result<double> parse_fraction(std::string_view text) {
    const std::string normalized = lower(text);
    double value = 0;
    std::string rest;
    if (!parse_leading_number(normalized, &value, &rest) || (!rest.empty() && rest != "%")) {
        return invalid_argument(fmt::format("'{}' is not a fraction (examples: 0.2, 20%)", text));
    }
    if (rest == "%") value /= 100.0;
    if (value < 0 || value >= 1) return invalid_argument(fmt::format("'{}' must lie in [0, 1) (or 0% to 99%)", text));
    return value;
}

std::string format_bytes(double bytes) {
    const double magnitude = std::fabs(bytes);
    if (magnitude >= 1e12) return fmt::format("{:.2f} TB", bytes / 1e12);
    if (magnitude >= 1e9) return fmt::format("{:.2f} GB", bytes / 1e9);
    if (magnitude >= 1e6) return fmt::format("{:.2f} MB", bytes / 1e6);
    if (magnitude >= 1e3) return fmt::format("{:.1f} kB", bytes / 1e3);
    return fmt::format("{:.0f} B", bytes);
}

std::string format_rate(double per_second, std::string_view unit) {
    static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P"};
    int prefix_idx = 0;
    double value = per_second;
    while (std::fabs(value) >= 1000.0 && prefix_idx < 5) {
        value /= 1000.0;
        ++prefix_idx;
    }
    return fmt::format("{:.3g} {}{}", value, kPrefixes[prefix_idx], unit);
}

std::string format_count(double value) {
    const double magnitude = std::fabs(value);
    if (magnitude >= 1e9) return fmt::format("{:.2f} B", value / 1e9);
    if (magnitude >= 1e6) return fmt::format("{:.1f} M", value / 1e6);
    return fmt::format("{:.0f}", value);
}

std::string format_ms(double seconds) {
    if (seconds >= 10.0) return fmt::format("{:.1f} s", seconds);
    if (seconds >= 1.0) return fmt::format("{:.2f} s", seconds);
    if (seconds >= 0.01) return fmt::format("{:.1f} ms", seconds * 1e3);
    return fmt::format("{:.2f} ms", seconds * 1e3);
}

}  // namespace tern::plan
