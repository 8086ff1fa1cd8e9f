// Python's number parsing (int(), float()) and printf-style formatting ("%s" % x), shared by filters and the
// evaluator's % operator.
#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/builtins.h"
#include "chat/py_string.h"

namespace tern::chat::jinja {
namespace {

// Removes the underscores Python allows between digits; nullopt when one is misplaced.
std::optional<std::string> strip_digit_underscores(std::string_view text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '_') {
            out += text[i];
            continue;
        }
        const bool between = i > 0 && i + 1 < text.size() && std::isalnum(static_cast<unsigned char>(text[i - 1])) &&
                             std::isalnum(static_cast<unsigned char>(text[i + 1]));
        if (!between) return std::nullopt;
    }
    return out;
}

struct Spec {
    std::string key;  // %(key)s
    std::string flags;
    int width = -1;
    int precision = -1;
    char type = 's';
};

Result<std::string> format_one(const Spec& spec, const Value& value, Budget& budget) {
    std::string flags = spec.flags;
    std::string body;
    char buffer[512];
    const auto c_format = [&](char type, const char* length) {
        std::string fmt(1, '%');
        fmt += flags;
        if (spec.width >= 0) fmt += std::to_string(std::min(spec.width, 200));
        if (spec.precision >= 0) {
            fmt += '.';
            fmt += std::to_string(std::min(spec.precision, 100));
        }
        fmt += length;
        fmt += type;
        return fmt;
    };
    switch (spec.type) {
        case 's':
        case 'r': {
            TERN_ASSIGN_OR_RETURN(body, spec.type == 's' ? budget.str(value) : budget.repr(value));
            if (spec.precision >= 0) {
                const std::vector<size_t> offsets = code_point_offsets(body);
                if (static_cast<size_t>(spec.precision) + 1 < offsets.size()) body.resize(offsets[spec.precision]);
            }
            const int64_t length = static_cast<int64_t>(py_length(body));
            if (std::min(spec.width, 1 << 16) > length) {
                const std::string padding(static_cast<size_t>(std::min(spec.width, 1 << 16) - length), ' ');
                body = flags.find('-') != std::string::npos ? body + padding : padding + body;
            }
            return body;
        }
        case 'd':
        case 'i':
        case 'x':
        case 'X':
        case 'o':
        case 'c': {
            if (!value.is_numeric()) {
                return invalid_argument(std::string("%") + spec.type + " format: a real number is required, not " +
                                        value.type_name());
            }
            const double real = value.as_double();
            if (!value.is_integral() && !(real > -9223372036854775808.0 && real < 9223372036854775808.0)) {
                return invalid_argument("integer overflow (the result does not fit in 64 bits)");
            }
            const long long number = value.is_integral() ? value.as_int() : static_cast<long long>(real);
            if (spec.type == 'c') {
                std::string out;
                append_utf8(out, static_cast<char32_t>(number));
                return out;
            }
            std::snprintf(buffer, sizeof(buffer), c_format(spec.type == 'i' ? 'd' : spec.type, "ll").c_str(), number);
            return std::string(buffer);
        }
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G':
            if (!value.is_numeric()) {
                return invalid_argument(std::string("%") + spec.type + " format: a real number is required, not " +
                                        value.type_name());
            }
            std::snprintf(buffer, sizeof(buffer), c_format(spec.type, "").c_str(), value.as_double());
            return std::string(buffer);
        default:
            return invalid_argument(std::string("unsupported format character '") + spec.type + "'");
    }
}

// Parses one "%..." spec starting after the '%' at `pos`; advances `pos` past it.
Result<Spec> parse_spec(const std::string& format, size_t& pos) {
    Spec spec;
    if (pos < format.size() && format[pos] == '(') {
        const size_t close = format.find(')', pos);
        if (close == std::string::npos) return invalid_argument("incomplete format key");
        spec.key = format.substr(pos + 1, close - pos - 1);
        pos = close + 1;
    }
    while (pos < format.size() && std::string_view("-+ #0").find(format[pos]) != std::string_view::npos) {
        spec.flags += format[pos++];
    }
    const auto number = [&]() {
        int value = 0;
        while (pos < format.size() && std::isdigit(static_cast<unsigned char>(format[pos])) && value < 100000) {
            value = value * 10 + (format[pos++] - '0');
        }
        return value;
    };
    if (pos < format.size() && std::isdigit(static_cast<unsigned char>(format[pos]))) spec.width = number();
    if (pos < format.size() && format[pos] == '.') {
        ++pos;
        spec.precision = number();
    }
    if (pos >= format.size()) return invalid_argument("incomplete format");
    spec.type = format[pos++];
    return spec;
}

}  // namespace

std::optional<int64_t> parse_python_int(std::string_view text, int base) {
    const std::string stripped = py_strip(text, std::nullopt, true, true);
    std::string_view digits = stripped;
    bool negative = false;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
        negative = digits[0] == '-';
        digits.remove_prefix(1);
    }
    if (digits.empty() || digits[0] == '_') return std::nullopt;
    const std::optional<std::string> clean = strip_digit_underscores(digits);
    if (!clean) return std::nullopt;
    uint64_t magnitude = 0;
    const auto result = std::from_chars(clean->data(), clean->data() + clean->size(), magnitude, base);
    if (result.ec != std::errc() || result.ptr != clean->data() + clean->size()) return std::nullopt;
    if (magnitude > static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0)) return std::nullopt;
    return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

std::optional<double> parse_python_float(std::string_view text) {
    const std::string stripped = py_strip(text, std::nullopt, true, true);
    std::string_view body = stripped;
    double sign = 1;
    if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
        sign = body[0] == '-' ? -1 : 1;
        body.remove_prefix(1);
    }
    const std::string lower = py_lower(body);
    if (lower == "inf" || lower == "infinity") return sign * HUGE_VAL;
    if (lower == "nan") return std::nan("");
    if (body.empty() || body[0] == '_') return std::nullopt;
    const std::optional<std::string> clean = strip_digit_underscores(body);
    if (!clean || clean->empty() || (*clean)[0] == '+' || (*clean)[0] == '-') return std::nullopt;
    double value = 0;
    const auto result = std::from_chars(clean->data(), clean->data() + clean->size(), value);
    if (result.ec == std::errc::result_out_of_range) return sign * (value == 0 ? 0.0 : HUGE_VAL);
    if (result.ec != std::errc() || result.ptr != clean->data() + clean->size()) return std::nullopt;
    return sign * value;
}

Result<Value> percent_format(const std::string& format, const Value& args, Budget& budget) {
    std::string out;
    size_t next_arg = 0;
    const bool by_key = args.is_mapping();
    const List single = {args};
    const List& positional = args.is_tuple() ? args.as_list() : single;
    for (size_t pos = 0; pos < format.size();) {
        if (format[pos] != '%') {
            out += format[pos++];
            continue;
        }
        ++pos;
        if (pos < format.size() && format[pos] == '%') {
            out += '%';
            ++pos;
            continue;
        }
        TERN_ASSIGN_OR_RETURN(const Spec spec, parse_spec(format, pos));
        const Value* value = nullptr;
        if (!spec.key.empty()) {
            if (args.is_undefined()) return undefined_error(args);
            if (!by_key) return invalid_argument("format requires a mapping");
            value = args.as_dict().find(std::string_view(spec.key));
            if (value == nullptr) return invalid_argument("KeyError: '" + spec.key + "'");
        } else if (by_key) {
            value = &args;
        } else {
            if (next_arg >= positional.size()) return invalid_argument("not enough arguments for format string");
            value = &positional[next_arg++];
        }
        TERN_ASSIGN_OR_RETURN(std::string piece, format_one(spec, *value, budget));
        out += piece;
        if (out.size() > budget.options().max_output_bytes) return budget.charge_string(out.size());
    }
    // CPython skips this check when the argument supports item access (a dict or a list), not for str or scalars.
    if (!by_key && next_arg < positional.size() && !(args.is_list() && !args.is_tuple()) && !args.is_undefined()) {
        return invalid_argument("not all arguments converted during string formatting");
    }
    TERN_RETURN_IF_ERROR(budget.charge_string(out.size()));
    return Value::string(std::move(out));
}

}  // namespace tern::chat::jinja
