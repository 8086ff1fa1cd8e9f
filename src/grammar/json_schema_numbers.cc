// Integers with exact bounds (digit-range rules, as llama.cpp's json-schema-to-grammar builds them) and numbers
// with sign bounds (minimum 0 and the like).
#include <algorithm>
#include <cmath>

#include "grammar/json_schema_compiler.h"

namespace tern::grammar::json_schema {
namespace {

// Bounds beyond this are refused; it keeps every count below 10^19, which fits uint64_t.
constexpr long double kMaxBound = 1e18L;
// Digits of an integer without an upper bound (see the number helpers in json_schema_rules.cc).
constexpr size_t kMaxIntegerDigits = 16;

uint64_t power_of_ten(size_t exponent) {
    uint64_t value = 1;
    while (exponent-- > 0) value *= 10;
    return value;
}

std::string join(const std::string& first, const std::string& second) {
    if (first.empty()) return second;
    if (second.empty()) return first;
    return first + " " + second;
}

std::string digit_class(char low, char high) {
    if (low == high) return std::string("\"") + low + "\"";
    return std::string("[") + low + "-" + high + "]";
}

std::string any_digits(size_t min, size_t max) {
    if (max == 0) return "";
    if (min == max) return min == 1 ? "[0-9]" : "[0-9]{" + std::to_string(min) + "}";
    return "[0-9]{" + std::to_string(min) + "," + std::to_string(max) + "}";
}

// Every decimal string of the length of `low` from `low` to `high` (same length, low <= high): fix the common
// first digit, or split into "low's first digit, then at least low's rest", "a digit strictly between, then
// anything", "high's first digit, then at most high's rest".
std::string same_length_range(std::string_view low, std::string_view high) {
    if (low.empty()) return "";
    if (low[0] == high[0]) return join(digit_class(low[0], low[0]), same_length_range(low.substr(1), high.substr(1)));
    const size_t num_rest = low.size() - 1;
    const bool low_rest_zeros = low.find_first_not_of('0', 1) == std::string_view::npos;
    const bool high_rest_nines = high.find_first_not_of('9', 1) == std::string_view::npos;
    std::vector<std::string> alternatives;
    if (!low_rest_zeros) {
        alternatives.push_back(
            join(digit_class(low[0], low[0]), same_length_range(low.substr(1), std::string(num_rest, '9'))));
    }
    const char first_free = low_rest_zeros ? low[0] : static_cast<char>(low[0] + 1);
    const char last_free = high_rest_nines ? high[0] : static_cast<char>(high[0] - 1);
    if (first_free <= last_free)
        alternatives.push_back(join(digit_class(first_free, last_free), any_digits(num_rest, num_rest)));
    if (!high_rest_nines) {
        alternatives.push_back(
            join(digit_class(high[0], high[0]), same_length_range(std::string(num_rest, '0'), high.substr(1))));
    }
    return any_of_texts(alternatives);
}

// The largest magnitude allowed when there is no upper bound: kMaxIntegerDigits digits, or as many as `low` has.
uint64_t unbounded_top(uint64_t low) {
    return power_of_ten(std::max(kMaxIntegerDigits, std::to_string(low).size())) - 1;
}

// Decimal spellings (no leading zeros) of low..top.
std::string magnitude_range(uint64_t low, uint64_t top) {
    std::vector<std::string> alternatives;
    if (low == 0) {
        alternatives.push_back("\"0\"");
        if (top == 0) return alternatives[0];
        low = 1;
    }
    const size_t num_low_digits = std::to_string(low).size();
    const size_t num_top_digits = std::to_string(top).size();
    std::optional<size_t> full_run_start;  // lengths whose every number is in range, written as one alternative
    for (size_t length = num_low_digits; length <= num_top_digits; ++length) {
        const uint64_t length_low = std::max(low, power_of_ten(length - 1));
        const uint64_t length_high = std::min(top, power_of_ten(length) - 1);
        const bool full = length_low == power_of_ten(length - 1) && length_high == power_of_ten(length) - 1;
        if (full && !full_run_start) full_run_start = length;
        if (full && length < num_top_digits) continue;
        if (full_run_start) {
            const size_t run_end = full ? length : length - 1;
            alternatives.push_back(join("[1-9]", any_digits(*full_run_start - 1, run_end - 1)));
            full_run_start.reset();
        }
        if (!full) alternatives.push_back(same_length_range(std::to_string(length_low), std::to_string(length_high)));
    }
    return any_of_texts(alternatives);
}

// A bound keyword as a number, or none when absent; an error when it is not a number or too large.
Result<std::optional<long double>> read_bound(const Json& schema, std::string_view keyword,
                                              const std::string& pointer) {
    const auto value = schema.find(keyword);
    if (value == schema.end() || value->is_boolean()) return std::optional<long double>();  // booleans: draft 4
    if (!value->is_number())
        return schema_error(std::string("'") + std::string(keyword) + "' must be a number", pointer);
    const long double bound = value->is_number_unsigned()  ? static_cast<long double>(value->get<uint64_t>())
                              : value->is_number_integer() ? static_cast<long double>(value->get<int64_t>())
                                                           : static_cast<long double>(value->get<double>());
    if (std::fabs(bound) > kMaxBound) {
        return schema_error(std::string("integer bound '") + std::string(keyword) + "' beyond +-10^18 is not supported",
                            pointer);
    }
    return std::optional<long double>(bound);
}

bool draft4_exclusive(const Json& schema, std::string_view keyword) {
    const auto flag = schema.find(keyword);
    return flag != schema.end() && *flag == Json(true);
}

// The smallest and largest integers the four bound keywords allow.
Result<std::pair<std::optional<int64_t>, std::optional<int64_t>>> integer_bounds(const Json& schema,
                                                                                 const std::string& pointer) {
    TERN_ASSIGN_OR_RETURN(const auto minimum, read_bound(schema, "minimum", pointer));
    TERN_ASSIGN_OR_RETURN(const auto maximum, read_bound(schema, "maximum", pointer));
    TERN_ASSIGN_OR_RETURN(const auto exclusive_minimum, read_bound(schema, "exclusiveMinimum", pointer));
    TERN_ASSIGN_OR_RETURN(const auto exclusive_maximum, read_bound(schema, "exclusiveMaximum", pointer));
    std::optional<int64_t> low;
    std::optional<int64_t> high;
    const auto raise_low = [&](long double bound) {
        low = std::max(low.value_or(INT64_MIN), static_cast<int64_t>(bound));
    };
    const auto lower_high = [&](long double bound) {
        high = std::min(high.value_or(INT64_MAX), static_cast<int64_t>(bound));
    };
    if (minimum)
        raise_low(draft4_exclusive(schema, "exclusiveMinimum") ? std::floor(*minimum) + 1 : std::ceil(*minimum));
    if (exclusive_minimum) raise_low(std::floor(*exclusive_minimum) + 1);
    if (maximum)
        lower_high(draft4_exclusive(schema, "exclusiveMaximum") ? std::ceil(*maximum) - 1 : std::floor(*maximum));
    if (exclusive_maximum) lower_high(std::ceil(*exclusive_maximum) - 1);
    if (low && high && *low > *high) {
        return schema_error("the integer bounds leave no value (smallest allowed " + std::to_string(*low) +
                                ", largest allowed " + std::to_string(*high) + ")",
                            pointer);
    }
    return std::make_pair(low, high);
}

enum class SignBound { kNone, kZeroInclusive, kZeroExclusive };

// minimum/exclusiveMinimum (or maximum/exclusiveMaximum) of a number: only 0 is supported.
Result<SignBound> sign_bound(const Json& schema, std::string_view inclusive, std::string_view exclusive,
                             const std::string& pointer) {
    SignBound bound = SignBound::kNone;
    for (std::string_view keyword : {inclusive, exclusive}) {
        const auto value = schema.find(keyword);
        if (value == schema.end() || value->is_boolean()) continue;
        if (!value->is_number() || value->get<double>() != 0.0) {
            return schema_error(std::string("number bound '") + std::string(keyword) + "' = " + value->dump() +
                                    " is not supported: number bounds other than 0 are not supported (use type "
                                    "integer for whole numbers)",
                                pointer);
        }
        const bool is_exclusive = keyword == exclusive || draft4_exclusive(schema, exclusive);
        bound = is_exclusive ? SignBound::kZeroExclusive : std::max(bound, SignBound::kZeroInclusive);
    }
    return bound;
}

}  // namespace

Result<std::string> integer_range_gbnf(std::optional<int64_t> min, std::optional<int64_t> max) {
    const auto in_range = [](std::optional<int64_t> bound) {
        return !bound || (*bound >= -static_cast<int64_t>(kMaxBound) && *bound <= static_cast<int64_t>(kMaxBound));
    };
    if (!in_range(min) || !in_range(max)) return invalid_argument("integer bounds beyond +-10^18 are not supported");
    if (min && max && *min > *max) return invalid_argument("integer range with min above max");
    std::vector<std::string> alternatives;
    if (!min || *min < 0) {  // "-" then the magnitudes from |max| (or 1) up to |min| (or without bound)
        const uint64_t smallest = max && *max < 0 ? static_cast<uint64_t>(-*max) : 1;
        const uint64_t largest = min ? static_cast<uint64_t>(-*min) : unbounded_top(smallest);
        alternatives.push_back("\"-\" " + magnitude_range(smallest, largest));
    }
    if (!max || *max >= 0) {
        const uint64_t smallest = min ? static_cast<uint64_t>(std::max<int64_t>(*min, 0)) : 0;
        alternatives.push_back(magnitude_range(smallest, max ? static_cast<uint64_t>(*max) : unbounded_top(smallest)));
    }
    return any_of_texts(alternatives);
}

Result<std::string> SchemaCompiler::compile_integer(const Json& schema, const std::string& pointer) {
    TERN_ASSIGN_OR_RETURN(const auto bounds, integer_bounds(schema, pointer));
    if (!bounds.first && !bounds.second) return helper(Helper::kInteger);
    Result<std::string> range = integer_range_gbnf(bounds.first, bounds.second);
    if (!range.is_ok()) return schema_error(range.status().message(), pointer);
    return range;
}

Result<std::string> SchemaCompiler::compile_number(const Json& schema, const std::string& pointer) {
    TERN_ASSIGN_OR_RETURN(const SignBound lower, sign_bound(schema, "minimum", "exclusiveMinimum", pointer));
    TERN_ASSIGN_OR_RETURN(const SignBound upper, sign_bound(schema, "maximum", "exclusiveMaximum", pointer));
    const std::string zero = "\"0\"";  // the one spelling of zero kept: "0.0" and "0e1" are left out
    if (lower == SignBound::kNone && upper == SignBound::kNone) return helper(Helper::kNumber);
    if (lower == SignBound::kNone) {
        const std::string negative = "\"-\" " + helper(Helper::kPositiveNumber);
        return upper == SignBound::kZeroExclusive ? negative : "( " + negative + " | " + zero + " )";
    }
    if (upper == SignBound::kNone) {
        if (lower == SignBound::kZeroExclusive) return helper(Helper::kPositiveNumber);
        return "( " + helper(Helper::kPositiveNumber) + " | " + zero + " )";
    }
    if (lower == SignBound::kZeroInclusive && upper == SignBound::kZeroInclusive) return zero;
    return schema_error("the number bounds leave no value", pointer);
}

}  // namespace tern::grammar::json_schema
