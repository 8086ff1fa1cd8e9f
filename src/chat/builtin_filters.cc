// Jinja2's built-in filters, with Hugging Face's tojson (Python's json.dumps, ensure_ascii off).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "chat/builtins.h"
#include "chat/json_value.h"
#include "chat/py_string.h"

namespace tern::chat::jinja {
namespace {

Value text(std::string value) { return Value::string(std::move(value)); }

// Jinja's make_attrgetter: "a.b.0" walks items (then attributes) part by part; digits index.
Result<Value> lookup_path(const Value& item, const Value& attribute) {
    if (!attribute.is_string()) return get_item(item, attribute);
    Value current = item;
    for (const std::string& part : py_split(attribute.as_string(), std::string("."), -1)) {
        const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        const std::optional<int64_t> index = digits ? parse_python_int(part, 10) : std::nullopt;
        TERN_ASSIGN_OR_RETURN(current, get_item(current, index ? Value::integer(*index) : Value::string(part)));
    }
    return current;
}

Value ignore_case(const Value& value) { return value.is_string() ? Value::string(py_lower(value.as_string())) : value; }

// Charges for comparing every key `times` times (each comparison walks a key at most whole).
Status charge_keys(const std::vector<std::pair<Value, Value>>& keyed, uint64_t times, Budget& budget) {
    uint64_t weight = 0;
    for (const auto& entry : keyed) weight = std::min(weight + entry.first.weight(), uint64_t{UINT32_MAX});
    return budget.charge_items(weight * times);  // the charge fails long before 2^32 x times
}

// Sorts by `key`, stably; fails when two keys cannot be ordered, like Python's sorted().
Status sort_by_keys(std::vector<std::pair<Value, Value>>& keyed, bool reverse, Budget& budget) {
    TERN_RETURN_IF_ERROR(charge_keys(keyed, 2 + static_cast<uint64_t>(std::log2(keyed.size() + 1)), budget));
    bool comparable = true;
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        const std::optional<int> order = reverse ? compare_values(b.first, a.first) : compare_values(a.first, b.first);
        comparable = comparable && order.has_value();
        return order.value_or(0) < 0;
    });
    if (!comparable) return invalid_argument("'<' not supported between the items being sorted");
    return Status::ok();
}

Result<Value> filter_length(const Value& input, const CallArgs& args, Budget&) {
    switch (input.kind()) {
        case ValueKind::kUndefined: return Value::integer(0);
        case ValueKind::kString: return Value::integer(static_cast<int64_t>(py_length(input.as_string())));
        case ValueKind::kList: return Value::integer(static_cast<int64_t>(input.as_list().size()));
        case ValueKind::kDict:
            if (!input.is_namespace()) return Value::integer(static_cast<int64_t>(input.as_dict().size()));
            [[fallthrough]];
        default: return invalid_argument(std::string("object of type '") + input.type_name() + "' has no len()");
    }
}

Result<Value> filter_trim(const Value& input, const CallArgs& args, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("trim", args, {"chars"}));
    std::optional<std::string> chars;
    if (bound[0].is_string()) chars = bound[0].as_string();
    TERN_ASSIGN_OR_RETURN(const std::string input_text, budget.str(input));
    return text(py_strip(input_text, chars, true, true));
}

// Applies a string -> string function to str(input), charging for the conversion.
template <typename Fn>
Result<Value> map_text(const Value& input, Budget& budget, Fn fn) {
    TERN_ASSIGN_OR_RETURN(const std::string input_text, budget.str(input));
    return text(fn(input_text));
}

Result<Value> filter_upper(const Value& input, const CallArgs&, Budget& budget) { return map_text(input, budget, py_upper); }
Result<Value> filter_lower(const Value& input, const CallArgs&, Budget& budget) { return map_text(input, budget, py_lower); }
Result<Value> filter_capitalize(const Value& input, const CallArgs&, Budget& budget) {
    return map_text(input, budget, py_capitalize);
}
Result<Value> filter_title(const Value& input, const CallArgs&, Budget& budget) { return map_text(input, budget, jinja_title); }
Result<Value> filter_string(const Value& input, const CallArgs&, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(std::string input_text, budget.str(input));
    return text(std::move(input_text));
}

Result<Value> filter_escape(const Value& input, const CallArgs&, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(const std::string input_text, budget.str(input));
    std::string out;
    for (char c : input_text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return text(std::move(out));
}

Result<Value> filter_tojson(const Value& input, const CallArgs& args, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"},
                                                {Value::boolean(false), Value::none(), Value::none(), Value::boolean(false)}));
    JsonDumpOptions options;
    options.ensure_ascii = bound[0].truthy();
    if (bound[1].is_integral()) {
        options.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(bound[1].as_int(), 0, 64)), ' ');
    } else if (bound[1].is_string()) {
        options.indent = bound[1].as_string();
    } else if (!bound[1].is_none()) {
        return invalid_argument("tojson indent must be an integer, a string or none");
    }
    if (bound[2].is_list() && bound[2].as_list().size() == 2 && bound[2].as_list()[0].is_string() &&
        bound[2].as_list()[1].is_string()) {
        options.item_separator = bound[2].as_list()[0].as_string();
        options.key_separator = bound[2].as_list()[1].as_string();
    } else if (!bound[2].is_none()) {
        return invalid_argument("tojson separators must be a pair of strings");
    }
    options.sort_keys = bound[3].truthy();
    TERN_RETURN_IF_ERROR(budget.charge_walk(input));
    TERN_ASSIGN_OR_RETURN(std::string json, dump_json(input, options));
    TERN_RETURN_IF_ERROR(budget.charge_string(json.size()));
    return text(std::move(json));
}

Result<Value> filter_join(const Value& input, const CallArgs& args, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("join", args, {"d", "attribute"}, {Value::string(""), Value::none()}));
    TERN_ASSIGN_OR_RETURN(const List items, iterate(input));
    TERN_ASSIGN_OR_RETURN(const std::string separator, budget.str(bound[0]));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += separator;
        if (bound[1].is_none()) {
            out += items[i].str(budget.options().max_output_bytes);
        } else {
            TERN_ASSIGN_OR_RETURN(const Value item, lookup_path(items[i], bound[1]));
            out += item.str(budget.options().max_output_bytes);
        }
        if (out.size() > budget.options().max_output_bytes) return budget.charge_string(out.size());
    }
    TERN_RETURN_IF_ERROR(budget.charge_string(out.size()));
    return text(std::move(out));
}

Result<Value> filter_default(const Value& input, const CallArgs& args, Budget&) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("default", args, {"default_value", "boolean"},
                                                {Value::string(""), Value::boolean(false)}));
    if (input.is_undefined() || (bound[1].truthy() && !input.truthy())) return bound[0];
    return input;
}

Result<Value> filter_first_or_last(const Value& input, bool first) {
    TERN_ASSIGN_OR_RETURN(const List items, iterate(input));
    if (items.empty()) return Value::undefined(first ? "No first item, sequence was empty." : "No last item, sequence was empty.");
    return first ? items.front() : items.back();
}

Result<Value> filter_first(const Value& input, const CallArgs&, Budget&) { return filter_first_or_last(input, true); }
Result<Value> filter_last(const Value& input, const CallArgs&, Budget&) { return filter_first_or_last(input, false); }

Result<Value> filter_list(const Value& input, const CallArgs&, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(List items, iterate(input));
    TERN_RETURN_IF_ERROR(budget.charge_items(items.size() + 1));
    return Value::list(std::move(items));
}

Result<Value> filter_items(const Value& input, const CallArgs&, Budget& budget) {
    if (input.is_undefined()) return Value::list({});
    if (!input.is_mapping()) return invalid_argument("Can only get item pairs from a mapping.");
    TERN_RETURN_IF_ERROR(budget.charge_items(input.as_dict().size() + 1));
    List items;
    for (const auto& [key, value] : input.as_dict().entries) items.push_back(Value::tuple({key, value}));
    return Value::list(std::move(items));
}

Result<Value> filter_reverse(const Value& input, const CallArgs&, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(List items, iterate(input));
    TERN_RETURN_IF_ERROR(budget.charge_items(items.size() + 1));
    std::reverse(items.begin(), items.end());
    if (!input.is_string()) return Value::list(std::move(items));
    std::string out;
    for (const Value& item : items) out += item.as_string();
    return text(std::move(out));
}

Result<Value> filter_replace(const Value& input, const CallArgs& args, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("replace", args, {"old", "new", "count"}, {Value::none()}));
    const int64_t count = bound[2].is_integral() ? bound[2].as_int() : -1;
    TERN_ASSIGN_OR_RETURN(const std::string input_text, budget.str(input));
    TERN_ASSIGN_OR_RETURN(const std::string old_text, budget.str(bound[0]));
    TERN_ASSIGN_OR_RETURN(const std::string new_text, budget.str(bound[1]));
    std::string out = py_replace(input_text, old_text, new_text, count);
    TERN_RETURN_IF_ERROR(budget.charge_string(out.size()));
    return text(std::move(out));
}

// Python's int(x) of a float; Python would grow a big int where this fails.
Result<Value> truncate_float(double value) {
    if (!(value > -9223372036854775808.0 && value < 9223372036854775808.0)) {
        return invalid_argument("integer overflow (the result does not fit in 64 bits)");
    }
    return Value::integer(static_cast<int64_t>(value));
}

Result<Value> filter_int(const Value& input, const CallArgs& args, Budget&) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("int", args, {"default", "base"}, {Value::integer(0), Value::integer(10)}));
    if (input.is_undefined()) return undefined_error(input);
    if (input.is_integral()) return Value::integer(input.as_int());
    if (input.is_float()) {
        if (!std::isfinite(input.as_double())) return bound[0];
        return truncate_float(input.as_double());
    }
    if (input.is_string()) {
        const int base = bound[1].is_integral() ? static_cast<int>(bound[1].as_int()) : 10;
        if (base >= 2 && base <= 36) {
            if (auto number = parse_python_int(input.as_string(), base)) return Value::integer(*number);
        }
        if (auto number = parse_python_float(input.as_string()); number && std::isfinite(*number)) {
            return truncate_float(*number);
        }
    }
    return bound[0];
}

Result<Value> filter_float(const Value& input, const CallArgs& args, Budget&) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("float", args, {"default"}, {Value::number(0.0)}));
    if (input.is_undefined()) return undefined_error(input);
    if (input.is_numeric()) return Value::number(input.as_double());
    if (input.is_string()) {
        if (auto number = parse_python_float(input.as_string())) return Value::number(*number);
    }
    return bound[0];
}

Result<Value> filter_abs(const Value& input, const CallArgs&, Budget&) {
    if (input.is_integral()) return Value::integer(input.as_int() < 0 ? -input.as_int() : input.as_int());
    if (input.is_float()) return Value::number(std::fabs(input.as_double()));
    return invalid_argument(std::string("bad operand type for abs(): '") + input.type_name() + "'");
}

Result<Value> filter_round(const Value& input, const CallArgs& args, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("round", args, {"precision", "method"},
                                                {Value::integer(0), Value::string("common")}));
    if (!input.is_numeric()) return invalid_argument("round() needs a number");
    const int64_t precision = bound[0].is_integral() ? std::clamp<int64_t>(bound[0].as_int(), -300, 300) : 0;
    TERN_ASSIGN_OR_RETURN(const std::string method, budget.str(bound[1]));
    if (method == "common") {
        if (input.is_integral() && precision >= 0) return Value::integer(input.as_int());
        if (precision >= 0) {
            // printf rounds the exact binary value half-to-even, as Python's round() does.
            char buffer[512];
            std::snprintf(buffer, sizeof(buffer), "%.*f", static_cast<int>(std::min<int64_t>(precision, 100)), input.as_double());
            return Value::number(parse_python_float(buffer).value_or(input.as_double()));
        }
        const double scale = std::pow(10.0, static_cast<double>(-precision));
        return Value::number(std::nearbyint(input.as_double() / scale) * scale);
    }
    if (method != "ceil" && method != "floor") return invalid_argument("method must be common, ceil or floor");
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double scaled = input.as_double() * scale;
    return Value::number((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

Result<Value> filter_indent(const Value& input, const CallArgs& args, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("indent", args, {"width", "first", "blank"},
                                                {Value::integer(4), Value::boolean(false), Value::boolean(false)}));
    // Jinja's do_indent appends "\n" to its input before anything else, so only strings get through.
    if (input.is_undefined()) return undefined_error(input);
    if (!input.is_string()) {
        return invalid_argument(std::string("unsupported operand type(s) for +=: '") + input.type_name() + "' and 'str'");
    }
    std::string indention;
    if (bound[0].is_string()) {
        indention = bound[0].as_string();
    } else if (bound[0].is_integral()) {
        indention.assign(static_cast<size_t>(std::clamp<int64_t>(bound[0].as_int(), 0, 256)), ' ');
    }
    const std::vector<std::string> lines = py_splitlines(input.as_string() + "\n", false);
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) out += "\n";
        const bool indent = i > 0 && (bound[2].truthy() || !lines[i].empty());
        if (indent) out += indention;
        out += lines[i];
    }
    if (bound[1].truthy()) out = indention + out;
    TERN_RETURN_IF_ERROR(budget.charge_string(out.size()));
    return text(std::move(out));
}

Result<Value> filter_center(const Value& input, const CallArgs& args, Budget& budget) {
    CallArgs call;
    call.positional = args.positional.empty() ? std::vector<Value>{Value::integer(80)} : args.positional;
    TERN_ASSIGN_OR_RETURN(std::string input_text, budget.str(input));
    return call_method(Value::string(std::move(input_text)), "center", call, budget);
}

Result<Value> filter_wordcount(const Value& input, const CallArgs&, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(const std::string input_text, budget.str(input));
    int64_t words = 0;
    bool in_word = false;
    for (char c : input_text) {
        const bool word_char = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80);
        if (word_char && !in_word) ++words;
        in_word = word_char;
    }
    return Value::integer(words);
}

Result<Value> filter_format(const Value& input, const CallArgs& args, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(const std::string format, budget.str(input));
    if (!args.keywords.empty()) {
        Dict named;
        for (const auto& [key, value] : args.keywords) named.set(Value::string(key), value);
        return percent_format(format, Value::dict(std::move(named)), budget);
    }
    return percent_format(format, Value::tuple(args.positional), budget);
}

Result<Value> filter_attr(const Value& input, const CallArgs& args, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("attr", args, {"name"}));
    TERN_ASSIGN_OR_RETURN(const std::string name, budget.str(bound[0]));
    if (input.is_undefined()) return undefined_error(input);
    // Attribute only, not item: a dict key is not an attribute.
    if (input.is_namespace()) {
        if (const Value* found = input.as_dict().find(std::string_view(name))) return *found;
    } else if (has_method(input, name)) {
        return get_attribute(input, name);
    }
    return Value::undefined(std::string("'") + input.type_name() + " object' has no attribute '" + name + "'");
}

// select / reject / selectattr / rejectattr.
Result<Value> select_items(const Value& input, const CallArgs& args, Budget& budget, bool keep, bool by_attribute) {
    if (!input.truthy()) return Value::list({});  // Jinja's select_or_reject starts with "if value:"
    TERN_ASSIGN_OR_RETURN(const List items, iterate(input));
    TERN_RETURN_IF_ERROR(budget.charge_items(items.size() + 1));
    size_t next = 0;
    Value attribute;
    if (by_attribute) {
        if (args.positional.empty()) return invalid_argument("Missing parameter for attribute name");
        attribute = args.positional[next++];
    }
    TestFn test = nullptr;
    CallArgs test_args;
    if (next < args.positional.size()) {
        TERN_ASSIGN_OR_RETURN(const std::string name, budget.str(args.positional[next++]));
        test = find_test(name);
        if (test == nullptr) return invalid_argument("No test named '" + name + "'");
        test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next), args.positional.end());
        test_args.keywords = args.keywords;
    }
    List out;
    for (const Value& item : items) {
        Value subject = item;
        if (by_attribute) {
            TERN_ASSIGN_OR_RETURN(subject, lookup_path(item, attribute));
        }
        bool pass = subject.truthy();
        if (test != nullptr) {
            TERN_ASSIGN_OR_RETURN(pass, run_test(test, subject, test_args, budget));
        }
        if (pass == keep) out.push_back(item);
    }
    return Value::list(std::move(out));
}

Result<Value> filter_select(const Value& in, const CallArgs& a, Budget& b) { return select_items(in, a, b, true, false); }
Result<Value> filter_reject(const Value& in, const CallArgs& a, Budget& b) { return select_items(in, a, b, false, false); }
Result<Value> filter_selectattr(const Value& in, const CallArgs& a, Budget& b) { return select_items(in, a, b, true, true); }
Result<Value> filter_rejectattr(const Value& in, const CallArgs& a, Budget& b) { return select_items(in, a, b, false, true); }

Result<Value> filter_map(const Value& input, const CallArgs& args, Budget& budget) {
    if (!input.truthy()) return Value::list({});  // Jinja's map starts with "if value:"
    TERN_ASSIGN_OR_RETURN(const List items, iterate(input));
    TERN_RETURN_IF_ERROR(budget.charge_items(items.size() + 1));
    List out;
    const Value* attribute = nullptr;
    Value fallback = Value::none();
    for (const auto& [key, value] : args.keywords) {
        if (key == "attribute") attribute = &value;
        if (key == "default") fallback = value;
    }
    if (args.positional.empty() && attribute != nullptr) {
        for (const Value& item : items) {
            TERN_ASSIGN_OR_RETURN(Value mapped, lookup_path(item, *attribute));
            out.push_back(mapped.is_undefined() && !fallback.is_none() ? fallback : mapped);
        }
        return Value::list(std::move(out));
    }
    if (args.positional.empty()) return invalid_argument("map requires a filter argument");
    TERN_ASSIGN_OR_RETURN(const std::string name, budget.str(args.positional[0]));
    const FilterFn filter = find_filter(name);
    if (filter == nullptr) return invalid_argument("No filter named '" + name + "'");
    CallArgs filter_args;
    filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
    filter_args.keywords = args.keywords;
    for (const Value& item : items) {
        TERN_ASSIGN_OR_RETURN(Value mapped, filter(item, filter_args, budget));
        out.push_back(std::move(mapped));
    }
    return Value::list(std::move(out));
}

// sort / unique / min / max / dictsort share the key: an attribute path, lower-cased unless case-sensitive.
Result<std::vector<std::pair<Value, Value>>> keyed_items(const Value& input, const Value& attribute, bool case_sensitive) {
    TERN_ASSIGN_OR_RETURN(const List items, iterate(input));
    std::vector<std::pair<Value, Value>> keyed;
    for (const Value& item : items) {
        Value key = item;
        if (!attribute.is_none() && !attribute.is_undefined()) {
            TERN_ASSIGN_OR_RETURN(key, lookup_path(item, attribute));
        }
        keyed.emplace_back(case_sensitive ? key : ignore_case(key), item);
    }
    return keyed;
}

Result<Value> filter_sort(const Value& input, const CallArgs& args, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("sort", args, {"reverse", "case_sensitive", "attribute"},
                                                {Value::boolean(false), Value::boolean(false), Value::none()}));
    TERN_ASSIGN_OR_RETURN(auto keyed, keyed_items(input, bound[2], bound[1].truthy()));
    TERN_RETURN_IF_ERROR(budget.charge_items(keyed.size() * 8 + 1));
    TERN_RETURN_IF_ERROR(sort_by_keys(keyed, bound[0].truthy(), budget));
    List out;
    for (auto& entry : keyed) out.push_back(std::move(entry.second));
    return Value::list(std::move(out));
}

Result<Value> filter_unique(const Value& input, const CallArgs& args, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("unique", args, {"case_sensitive", "attribute"},
                                                {Value::boolean(false), Value::none()}));
    TERN_ASSIGN_OR_RETURN(auto keyed, keyed_items(input, bound[1], bound[0].truthy()));
    TERN_RETURN_IF_ERROR(budget.charge_items(keyed.size() * keyed.size() / 16 + 1));
    TERN_RETURN_IF_ERROR(charge_keys(keyed, keyed.size() / 16 + 1, budget));
    List seen;
    List out;
    for (auto& entry : keyed) {
        const Value& key = entry.first;  // not a structured binding: clang 14 cannot capture one in the lambda
        // Python keeps the keys in a set.
        if ((key.is_list() && !key.is_tuple()) || key.is_dict()) {
            return invalid_argument(std::string("unhashable type: '") + key.type_name() + "'");
        }
        if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, key); })) continue;
        seen.push_back(key);
        out.push_back(entry.second);
    }
    return Value::list(std::move(out));
}

Result<Value> min_or_max(const Value& input, const CallArgs& args, Budget& budget, bool max) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args(max ? "max" : "min", args, {"case_sensitive", "attribute"},
                                                {Value::boolean(false), Value::none()}));
    TERN_ASSIGN_OR_RETURN(auto keyed, keyed_items(input, bound[1], bound[0].truthy()));
    TERN_RETURN_IF_ERROR(budget.charge_items(keyed.size() + 1));
    TERN_RETURN_IF_ERROR(charge_keys(keyed, 1, budget));
    if (keyed.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    for (size_t i = 1; i < keyed.size(); ++i) {
        const std::optional<int> order = compare_values(keyed[i].first, keyed[best].first);
        if (!order) return invalid_argument("'<' not supported between the items compared");
        if (max ? *order > 0 : *order < 0) best = i;
    }
    return keyed[best].second;
}

Result<Value> filter_min(const Value& in, const CallArgs& a, Budget& b) { return min_or_max(in, a, b, false); }
Result<Value> filter_max(const Value& in, const CallArgs& a, Budget& b) { return min_or_max(in, a, b, true); }

Result<Value> filter_dictsort(const Value& input, const CallArgs& args, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("dictsort", args, {"case_sensitive", "by", "reverse"},
                                                {Value::boolean(false), Value::string("key"), Value::boolean(false)}));
    if (!input.is_mapping()) return invalid_argument("dictsort needs a mapping");
    TERN_ASSIGN_OR_RETURN(const std::string by, budget.str(bound[1]));
    if (by != "key" && by != "value") return invalid_argument("You can only sort by either \"key\" or \"value\"");
    std::vector<std::pair<Value, Value>> keyed;
    for (const auto& [key, value] : input.as_dict().entries) {
        const Value& sort_key = by == "key" ? key : value;
        keyed.emplace_back(bound[0].truthy() ? sort_key : ignore_case(sort_key), Value::tuple({key, value}));
    }
    TERN_RETURN_IF_ERROR(budget.charge_items(keyed.size() * 8 + 1));
    TERN_RETURN_IF_ERROR(sort_by_keys(keyed, bound[2].truthy(), budget));
    List out;
    for (auto& entry : keyed) out.push_back(std::move(entry.second));
    return Value::list(std::move(out));
}

Result<Value> filter_sum(const Value& input, const CallArgs& args, Budget& budget) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("sum", args, {"attribute", "start"}, {Value::none(), Value::integer(0)}));
    TERN_ASSIGN_OR_RETURN(const List items, iterate(input));
    TERN_RETURN_IF_ERROR(budget.charge_items(items.size() + 1));
    Value total = bound[1];
    for (const Value& raw : items) {
        Value item = raw;
        if (!bound[0].is_none()) {
            TERN_ASSIGN_OR_RETURN(item, lookup_path(raw, bound[0]));
        }
        if (!item.is_numeric() || !total.is_numeric()) {
            return invalid_argument(std::string("unsupported operand type(s) for +: '") + total.type_name() + "' and '" +
                                    item.type_name() + "'");
        }
        if (total.is_integral() && item.is_integral()) {
            int64_t sum = 0;
            if (__builtin_add_overflow(total.as_int(), item.as_int(), &sum)) return invalid_argument("integer overflow");
            total = Value::integer(sum);
        } else {
            total = Value::number(total.as_double() + item.as_double());
        }
    }
    return total;
}

Result<Value> filter_safe(const Value& input, const CallArgs&, Budget& budget) {
    if (input.is_string()) return input;
    TERN_ASSIGN_OR_RETURN(std::string input_text, budget.str(input));
    return Value::string(std::move(input_text));
}

struct FilterEntry {
    std::string_view name;
    FilterFn fn;
};

constexpr FilterEntry kFilters[] = {
    {"abs", filter_abs},           {"attr", filter_attr},
    {"capitalize", filter_capitalize}, {"center", filter_center},
    {"count", filter_length},      {"d", filter_default},
    {"default", filter_default},   {"dictsort", filter_dictsort},
    {"e", filter_escape},          {"escape", filter_escape},
    {"first", filter_first},       {"float", filter_float},
    {"forceescape", filter_escape}, {"format", filter_format},
    {"indent", filter_indent},     {"int", filter_int},
    {"items", filter_items},       {"join", filter_join},
    {"last", filter_last},         {"length", filter_length},
    {"list", filter_list},         {"lower", filter_lower},
    {"map", filter_map},           {"max", filter_max},
    {"min", filter_min},
    {"reject", filter_reject},     {"rejectattr", filter_rejectattr},
    {"replace", filter_replace},   {"reverse", filter_reverse},
    {"round", filter_round},       {"safe", filter_safe},
    {"select", filter_select},     {"selectattr", filter_selectattr},
    {"sort", filter_sort},         {"string", filter_string},
    {"sum", filter_sum},           {"title", filter_title},
    {"tojson", filter_tojson},     {"trim", filter_trim},
    {"unique", filter_unique},     {"upper", filter_upper},
    {"wordcount", filter_wordcount},
};

}  // namespace

FilterFn find_filter(std::string_view name) {
    for (const FilterEntry& entry : kFilters) {
        if (entry.name == name) return entry.fn;
    }
    return nullptr;
}

}  // namespace tern::chat::jinja
