// Arrays (items, prefixItems, minItems/maxItems) and strings (minLength/maxLength, pattern, format).
#include <algorithm>
#include <cmath>

#include "grammar/json_schema_compiler.h"
#include "grammar/regex_to_gbnf.h"

namespace tern::grammar::json_schema {
namespace {

// The GBNF parser expands {n,m} into copies and stops at 10000; counts above that are refused here with the keyword
// that asked for them.
constexpr uint64_t kMaxCount = 10000;

// A count keyword (minItems, maxLength, ...): absent, or a non-negative integer up to kMaxCount.
Result<std::optional<uint64_t>> read_count(const Json& schema, std::string_view keyword, const std::string& pointer) {
    const auto value = schema.find(keyword);
    if (value == schema.end()) return std::optional<uint64_t>();
    const bool is_whole = value->is_number_unsigned() || (value->is_number() && value->get<double>() >= 0 &&
                                                          value->get<double>() == std::floor(value->get<double>()));
    if (!is_whole)
        return schema_error(std::string("'") + std::string(keyword) + "' must be a non-negative integer", pointer);
    const double count = value->get<double>();
    if (count > static_cast<double>(kMaxCount)) {
        return schema_error(
            std::string("'") + std::string(keyword) + "' above " + std::to_string(kMaxCount) + " is not supported",
            pointer);
    }
    return std::optional<uint64_t>(static_cast<uint64_t>(count));
}

struct CountRange {
    uint64_t min = 0;
    std::optional<uint64_t> max;  // none: unbounded
};

Result<CountRange> read_count_range(const Json& schema, std::string_view min_keyword, std::string_view max_keyword,
                                    const std::string& pointer) {
    TERN_ASSIGN_OR_RETURN(const std::optional<uint64_t> min, read_count(schema, min_keyword, pointer));
    TERN_ASSIGN_OR_RETURN(const std::optional<uint64_t> max, read_count(schema, max_keyword, pointer));
    if (min && max && *min > *max) {
        return schema_error(std::string("'") + std::string(min_keyword) + "' " + std::to_string(*min) + " is above '" +
                                std::string(max_keyword) + "' " + std::to_string(*max) + ": no value is allowed",
                            pointer);
    }
    return CountRange{min.value_or(0), max};
}

// " x{min,max}" style repetition of `element` (a rule or a parenthesized group); "" for {0,0}.
std::string repeat(const std::string& element, uint64_t min, std::optional<uint64_t> max) {
    if (max && *max == 0) return "";
    if (!max) return min == 0 ? element + "*" : min == 1 ? element + "+" : element + "{" + std::to_string(min) + ",}";
    if (min == *max) return min == 1 ? element : element + "{" + std::to_string(min) + "}";
    if (min == 0 && *max == 1) return element + "?";
    return element + "{" + std::to_string(min) + "," + std::to_string(*max) + "}";
}

// The item schemas of an array, read from 2020-12 keywords (prefixItems, items) or the older array form of items
// (items: [...], additionalItems).
struct ArrayShape {
    std::vector<std::string> prefix;  // rules for the first items
    std::optional<std::string> rest;  // rule for every later item; none when no more items are allowed
    CountRange count;
};

Result<ArrayShape> read_array_shape(SchemaCompiler& compiler, const Json& schema, const std::string& pointer,
                                    const std::string& name) {
    ArrayShape shape;
    TERN_ASSIGN_OR_RETURN(shape.count, read_count_range(schema, "minItems", "maxItems", pointer));
    const auto items = schema.find("items");
    const bool old_tuple = items != schema.end() && items->is_array();
    const std::string prefix_keyword = old_tuple ? "items" : "prefixItems";
    const std::string rest_keyword = old_tuple ? "additionalItems" : "items";
    const auto prefix = schema.find(prefix_keyword);
    if (prefix != schema.end() && !prefix->is_array()) {
        return schema_error("'" + prefix_keyword + "' must be an array of schemas", pointer);
    }
    bool more_allowed = true;
    for (size_t item_idx = 0; prefix != schema.end() && item_idx < prefix->size(); ++item_idx) {
        const Json& item = (*prefix)[item_idx];
        if (item == Json(false)) {  // no array reaches this position
            more_allowed = false;
            break;
        }
        TERN_ASSIGN_OR_RETURN(std::string rule,
                              compiler.compile_to_rule(
                                  item, child_pointer(child_pointer(pointer, prefix_keyword), std::to_string(item_idx)),
                                  name + "-item" + std::to_string(item_idx)));
        shape.prefix.push_back(std::move(rule));
    }
    const auto rest = schema.find(rest_keyword);
    if (more_allowed && !(rest != schema.end() && *rest == Json(false))) {
        const Json any = Json(true);
        TERN_ASSIGN_OR_RETURN(shape.rest,
                              compiler.compile_to_rule(rest != schema.end() ? *rest : any,
                                                       child_pointer(pointer, rest_keyword), name + "-item"));
    }
    return shape;
}

// Items from position `item_idx` on, all optional: nested ( "," item ( "," item ... )? )? over the prefix
// schemas, then a counted repetition of the rest schema.
std::string optional_items(const ArrayShape& shape, size_t item_idx, std::optional<uint64_t> max,
                           const std::string& ws) {
    if (max && item_idx >= *max) return "";
    const std::string comma = item_idx == 0 ? "" : "\",\" " + ws + " ";
    if (item_idx < shape.prefix.size()) {
        const std::string later = optional_items(shape, item_idx + 1, max, ws);
        return "( " + comma + shape.prefix[item_idx] + " " + ws + (later.empty() ? "" : " " + later) + " )?";
    }
    if (!shape.rest) return "";
    const std::string later_item = "( \",\" " + ws + " " + *shape.rest + " " + ws + " )";
    if (item_idx == 0) {
        const std::string later = repeat(later_item, 0, max ? std::optional<uint64_t>(*max - 1) : std::nullopt);
        return "( " + *shape.rest + " " + ws + (later.empty() ? "" : " " + later) + " )?";
    }
    return repeat(later_item, 0, max ? std::optional<uint64_t>(*max - item_idx) : std::nullopt);
}

}  // namespace

Result<std::string> SchemaCompiler::compile_array(const Json& schema, const std::string& pointer,
                                                  const std::string& name) {
    TERN_ASSIGN_OR_RETURN(const ArrayShape shape, read_array_shape(*this, schema, pointer, name));
    const uint64_t num_allowed = shape.rest ? UINT64_MAX : shape.prefix.size();
    if (shape.count.min > num_allowed) {
        return schema_error("'minItems' " + std::to_string(shape.count.min) +
                                " asks for more items than the item "
                                "schemas allow (" +
                                std::to_string(num_allowed) + ")",
                            pointer);
    }
    const std::optional<uint64_t> max =
        shape.rest ? shape.count.max : std::min<uint64_t>(shape.count.max.value_or(UINT64_MAX), num_allowed);
    const std::string ws = helper(Helper::kWs);
    std::vector<std::string> parts = {"\"[\"", ws};
    size_t item_idx = 0;
    for (; item_idx < shape.count.min && item_idx < shape.prefix.size(); ++item_idx) {
        parts.push_back((item_idx == 0 ? "" : "\",\" " + ws + " ") + shape.prefix[item_idx] + " " + ws);
    }
    if (item_idx < shape.count.min) {  // the remaining required items all use the rest schema
        if (item_idx == 0) parts.push_back(*shape.rest + " " + ws);
        const uint64_t num_after_comma = shape.count.min - std::max<size_t>(item_idx, 1);
        const std::string repeated =
            repeat("( \",\" " + ws + " " + *shape.rest + " " + ws + " )", num_after_comma, num_after_comma);
        if (!repeated.empty()) parts.push_back(repeated);
        item_idx = shape.count.min;
    }
    const std::string optional = optional_items(shape, item_idx, max, ws);
    if (!optional.empty()) parts.push_back(optional);
    parts.push_back("\"]\"");
    std::string text;
    for (const std::string& part : parts) text += (text.empty() ? "" : " ") + part;
    return text;
}

Result<std::string> SchemaCompiler::compile_string(const Json& schema, const std::string& pointer,
                                                   const std::string& name) {
    TERN_ASSIGN_OR_RETURN(const CountRange length, read_count_range(schema, "minLength", "maxLength", pointer));
    const bool has_length = schema.contains("minLength") || schema.contains("maxLength");
    const auto format = schema.find("format");
    std::string format_name = format != schema.end() && format->is_string() ? format->get<std::string>() : "";
    // Other formats (email, uri, ...) are annotations by default in JSON Schema 2020-12: any string is accepted.
    if (format_name != "date" && format_name != "time" && format_name != "date-time" && format_name != "uuid") {
        format_name.clear();
    }
    const std::string quote = "\"\\\"\"";
    if (const auto pattern = schema.find("pattern"); pattern != schema.end()) {
        if (!pattern->is_string()) return schema_error("'pattern' must be a string", pointer);
        if (has_length || !format_name.empty()) {
            return schema_error(
                "'pattern' together with minLength, maxLength or format is not supported: write "
                "the length into the pattern (e.g. ^[a-z]{1,20}$)",
                pointer);
        }
        const std::string rule = fresh_foreign_name(name + "-pattern");
        Result<std::string> rules = regex_to_gbnf(pattern->get<std::string>(), rule, RegexOptions{.json_string = true});
        if (!rules.is_ok()) return schema_error("'pattern' " + rules.status().message(), pointer);
        add_foreign_rules(rules.value());
        return quote + " " + rule + " " + quote;
    }
    if (!format_name.empty()) {
        if (has_length) {
            return schema_error("format '" + format_name + "' together with minLength or maxLength is not supported",
                                pointer);
        }
        if (format_name == "date") return quote + " " + helper(Helper::kDate) + " " + quote;
        if (format_name == "time") return quote + " " + helper(Helper::kTime) + " " + quote;
        if (format_name == "uuid") return quote + " " + helper(Helper::kUuid) + " " + quote;
        return quote + " " + helper(Helper::kDate) + " \"T\" " + helper(Helper::kTime) + " " + quote;
    }
    if (!has_length) return helper(Helper::kString);
    const std::string characters = repeat(helper(Helper::kChar), length.min, length.max);
    return quote + (characters.empty() ? "" : " " + characters) + " " + quote;
}

}  // namespace tern::grammar::json_schema
