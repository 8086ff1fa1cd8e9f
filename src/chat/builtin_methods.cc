// Python methods of str, dict and list that chat templates call (message.content.strip(), tool.items(), ...).
#include <algorithm>
#include <array>
#include <cctype>

#include "chat/builtins.h"
#include "chat/py_string.h"

namespace tern::chat::jinja {
namespace {

constexpr std::array<std::string_view, 30> kStringMethods = {
    "strip",   "lstrip",  "rstrip",  "upper",      "lower",   "title",   "capitalize", "swapcase",
    "startswith", "endswith", "split", "rsplit",   "splitlines", "replace", "find",    "rfind",
    "count",   "join",    "isdigit", "isalpha",    "isalnum", "isspace", "islower",   "isupper",
    "center",  "ljust",   "rjust",   "zfill",      "format",  "index"};
constexpr std::array<std::string_view, 4> kDictMethods = {"items", "keys", "values", "get"};
constexpr std::array<std::string_view, 6> kDictUnsafe = {"pop", "popitem", "update", "setdefault", "clear", "copy"};
constexpr std::array<std::string_view, 2> kListMethods = {"index", "count"};
constexpr std::array<std::string_view, 8> kListUnsafe = {"append", "extend", "insert", "pop",
                                                         "remove", "reverse", "sort",   "clear"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

Status unsafe(const Value& receiver, std::string_view name) {
    return invalid_argument("access to attribute '" + std::string(name) + "' of '" + receiver.type_name() +
                            "' object is unsafe (the sandbox is immutable)");
}

Result<std::optional<std::string>> optional_string(std::string_view method, const Value& value) {
    if (value.is_undefined() || value.is_none()) return std::optional<std::string>();
    if (!value.is_string()) return invalid_argument(std::string(method) + "() argument must be str or None");
    return std::optional<std::string>(value.as_string());
}

Result<int64_t> int_arg(std::string_view method, const Value& value, int64_t fallback) {
    if (value.is_undefined()) return fallback;
    if (!value.is_integral()) return invalid_argument(std::string(method) + "() argument must be an integer");
    return value.as_int();
}

Value string_list(const std::vector<std::string>& parts) {
    List items;
    items.reserve(parts.size());
    for (const std::string& part : parts) items.push_back(Value::string(part));
    return Value::list(std::move(items));
}

bool all_chars(const std::string& text, bool (*pred)(unsigned char)) {
    if (text.empty()) return false;
    return std::all_of(text.begin(), text.end(), [&](char c) { return pred(static_cast<unsigned char>(c)); });
}

Result<Value> affix_test(const std::string& text, const Value& affix, bool prefix) {
    std::vector<std::string> options;
    if (affix.is_string()) {
        options.push_back(affix.as_string());
    } else if (affix.is_tuple()) {
        for (const Value& item : affix.as_list()) {
            if (!item.is_string()) return invalid_argument("a tuple for startswith/endswith must hold strings");
            options.push_back(item.as_string());
        }
    } else {
        return invalid_argument(std::string(prefix ? "startswith" : "endswith") +
                                " first arg must be str or a tuple of str");
    }
    for (const std::string& option : options) {
        const bool hit = prefix ? text.starts_with(option) : text.ends_with(option);
        if (hit) return Value::boolean(true);
    }
    return Value::boolean(false);
}

Result<Value> pad(const std::string& text, const CallArgs& args, std::string_view method) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args(method, args, {"width", "fillchar"}, {Value::string(" ")}));
    TERN_ASSIGN_OR_RETURN(const int64_t width, int_arg(method, bound[0], -1));
    if (width < 0 && bound[0].is_undefined()) return invalid_argument(std::string(method) + "() takes a width");
    if (!bound[1].is_string() || py_length(bound[1].as_string()) != 1) {
        return invalid_argument(std::string(method) + "() fill character must be exactly one character long");
    }
    const int64_t length = static_cast<int64_t>(py_length(text));
    if (width <= length) return Value::string(text);
    if (width > (int64_t{1} << 24)) return invalid_argument(std::string(method) + "() width too large");
    const int64_t total = width - length;
    int64_t left = 0;
    if (method == "rjust") left = total;
    if (method == "center") left = total / 2 + (total & width & 1);  // CPython's rounding for odd padding
    std::string out;
    for (int64_t i = 0; i < left; ++i) out += bound[1].as_string();
    out += text;
    for (int64_t i = left; i < total; ++i) out += bound[1].as_string();
    return Value::string(std::move(out));
}

// str.format with positional and named fields, "{{" / "}}" escapes and !s / !r conversions; format specs after ':'
// are not supported.
Result<Value> format_string(const std::string& text, const CallArgs& args, Budget& budget) {
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '}' ) {
            if (i + 1 < text.size() && text[i + 1] == '}') ++i;
            out += '}';
            continue;
        }
        if (c != '{') {
            out += c;
            continue;
        }
        if (i + 1 < text.size() && text[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
        }
        const size_t close = text.find('}', i);
        if (close == std::string::npos) return invalid_argument("Single '{' encountered in format string");
        std::string field = text.substr(i + 1, close - i - 1);
        i = close;
        char conversion = 's';
        if (const size_t bang = field.find('!'); bang != std::string::npos) {
            conversion = bang + 1 < field.size() ? field[bang + 1] : 's';
            field.resize(bang);
        }
        if (field.find(':') != std::string::npos) return invalid_argument("format specs are not supported in format()");
        const Value* value = nullptr;
        if (field.empty() || std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
            size_t index = auto_index;
            if (field.empty()) {
                ++auto_index;
            } else if (field.size() > 6) {
                return invalid_argument("Replacement index " + field + " out of range");
            } else {
                index = static_cast<size_t>(std::stoi(field));
            }
            if (index >= args.positional.size()) return invalid_argument("Replacement index " + std::to_string(index) + " out of range");
            value = &args.positional[index];
        } else {
            for (const auto& [name, arg] : args.keywords) {
                if (name == field) value = &arg;
            }
            if (value == nullptr) return invalid_argument("KeyError: '" + field + "'");
        }
        TERN_ASSIGN_OR_RETURN(const std::string piece, conversion == 'r' ? budget.repr(*value) : budget.str(*value));
        out += piece;
        if (out.size() > budget.options().max_output_bytes) return budget.charge_string(out.size());
    }
    TERN_RETURN_IF_ERROR(budget.charge_string(out.size()));
    return Value::string(std::move(out));
}

// strip / lstrip / rstrip and the case changes.
Result<std::optional<Value>> string_case_method(const std::string& text, std::string_view name, const CallArgs& args) {
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        TERN_ASSIGN_OR_RETURN(auto bound, bind_args(name, args, {"chars"}));
        TERN_ASSIGN_OR_RETURN(auto chars, optional_string(name, bound[0]));
        return std::optional<Value>(Value::string(py_strip(text, chars, name != "rstrip", name != "lstrip")));
    }
    if (name == "upper") return std::optional<Value>(Value::string(py_upper(text)));
    if (name == "lower") return std::optional<Value>(Value::string(py_lower(text)));
    if (name == "title") return std::optional<Value>(Value::string(py_title(text)));
    if (name == "capitalize") return std::optional<Value>(Value::string(py_capitalize(text)));
    if (name == "swapcase") {
        std::string out = text;
        for (char& c : out) {
            if (c >= 'a' && c <= 'z') {
                c = static_cast<char>(c - 'a' + 'A');
            } else if (c >= 'A' && c <= 'Z') {
                c = static_cast<char>(c - 'A' + 'a');
            }
        }
        return std::optional<Value>(Value::string(std::move(out)));
    }
    return std::optional<Value>();
}

// split / rsplit / splitlines / join.
Result<std::optional<Value>> string_split_method(const std::string& text, std::string_view name, const CallArgs& args,
                                                 Budget& budget) {
    if (name == "split" || name == "rsplit") {
        TERN_ASSIGN_OR_RETURN(auto bound, bind_args(name, args, {"sep", "maxsplit"}));
        TERN_ASSIGN_OR_RETURN(auto sep, optional_string(name, bound[0]));
        if (sep && sep->empty()) return invalid_argument("empty separator");
        TERN_ASSIGN_OR_RETURN(const int64_t maxsplit, int_arg(name, bound[1], -1));
        const std::vector<std::string> parts =
            name == "split" ? py_split(text, sep, maxsplit) : py_rsplit(text, sep, maxsplit);
        TERN_RETURN_IF_ERROR(budget.charge_items(parts.size()));
        return std::optional<Value>(string_list(parts));
    }
    if (name == "splitlines") {
        TERN_ASSIGN_OR_RETURN(auto bound, bind_args(name, args, {"keepends"}));
        return std::optional<Value>(string_list(py_splitlines(text, bound[0].truthy())));
    }
    if (name == "join") {
        TERN_ASSIGN_OR_RETURN(auto bound, bind_args(name, args, {"iterable"}));
        TERN_ASSIGN_OR_RETURN(const List items, iterate(bound[0]));
        std::string out;
        for (size_t i = 0; i < items.size(); ++i) {
            if (!items[i].is_string()) {
                return invalid_argument("sequence item " + std::to_string(i) + ": expected str instance, " +
                                        items[i].type_name() + " found");
            }
            if (i > 0) out += text;
            out += items[i].as_string();
            if (out.size() > budget.options().max_output_bytes) return budget.charge_string(out.size());
        }
        TERN_RETURN_IF_ERROR(budget.charge_string(out.size()));
        return std::optional<Value>(Value::string(std::move(out)));
    }
    return std::optional<Value>();
}

// startswith / endswith / find / rfind / index / count / replace.
Result<std::optional<Value>> string_search_method(const std::string& text, std::string_view name, const CallArgs& args,
                                                  Budget& budget) {
    if (name == "startswith" || name == "endswith") {
        TERN_ASSIGN_OR_RETURN(auto bound, bind_args(name, args, {"affix"}));
        TERN_ASSIGN_OR_RETURN(Value hit, affix_test(text, bound[0], name == "startswith"));
        return std::optional<Value>(std::move(hit));
    }
    if (name == "replace") {
        TERN_ASSIGN_OR_RETURN(auto bound, bind_args(name, args, {"old", "new", "count"}));
        if (!bound[0].is_string() || !bound[1].is_string()) return invalid_argument("replace() arguments must be str");
        TERN_ASSIGN_OR_RETURN(const int64_t count, int_arg(name, bound[2], -1));
        std::string out = py_replace(text, bound[0].as_string(), bound[1].as_string(), count);
        TERN_RETURN_IF_ERROR(budget.charge_string(out.size()));
        return std::optional<Value>(Value::string(std::move(out)));
    }
    if (name != "find" && name != "rfind" && name != "index" && name != "count") return std::optional<Value>();
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args(name, args, {"sub"}));
    if (!bound[0].is_string()) return invalid_argument(std::string(name) + "() argument must be str");
    const std::string& sub = bound[0].as_string();
    if (name == "count") {
        if (sub.empty()) return std::optional<Value>(Value::integer(static_cast<int64_t>(py_length(text)) + 1));
        int64_t count = 0;
        for (size_t pos = text.find(sub); pos != std::string::npos; pos = text.find(sub, pos + sub.size())) ++count;
        return std::optional<Value>(Value::integer(count));
    }
    const size_t hit = name == "rfind" ? text.rfind(sub) : text.find(sub);
    if (hit == std::string::npos) {
        if (name == "index") return invalid_argument("substring not found");
        return std::optional<Value>(Value::integer(-1));
    }
    return std::optional<Value>(Value::integer(static_cast<int64_t>(py_length(std::string_view(text).substr(0, hit)))));
}

// isdigit and the other predicates.
std::optional<Value> string_predicate(const std::string& text, std::string_view name) {
    if (name == "isdigit") return Value::boolean(all_chars(text, [](unsigned char c) { return c >= '0' && c <= '9'; }));
    if (name == "isalpha") return Value::boolean(all_chars(text, [](unsigned char c) { return std::isalpha(c) != 0; }));
    if (name == "isalnum") return Value::boolean(all_chars(text, [](unsigned char c) { return std::isalnum(c) != 0; }));
    if (name == "isspace") return Value::boolean(py_all_space(text));
    if (name != "islower" && name != "isupper") return std::nullopt;
    const bool lower = name == "islower";
    bool cased = false;
    for (char c : text) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            cased = true;
            if (lower != (c >= 'a' && c <= 'z')) return Value::boolean(false);
        }
    }
    return Value::boolean(cased);
}

Result<Value> zfill(const std::string& text, const CallArgs& args) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("zfill", args, {"width"}));
    TERN_ASSIGN_OR_RETURN(const int64_t width, int_arg("zfill", bound[0], 0));
    const int64_t length = static_cast<int64_t>(py_length(text));
    if (width <= length) return Value::string(text);
    if (width > (int64_t{1} << 24)) return invalid_argument("zfill() width too large");
    const bool sign = !text.empty() && (text[0] == '-' || text[0] == '+');
    const std::string zeros(static_cast<size_t>(width - length), '0');
    return Value::string(sign ? text.substr(0, 1) + zeros + text.substr(1) : zeros + text);
}

Result<Value> call_string_method(const std::string& text, std::string_view name, const CallArgs& args,
                                 Budget& budget) {
    TERN_RETURN_IF_ERROR(budget.charge_string(text.size()));
    TERN_ASSIGN_OR_RETURN(std::optional<Value> result, string_case_method(text, name, args));
    if (!result) {
        TERN_ASSIGN_OR_RETURN(result, string_split_method(text, name, args, budget));
    }
    if (!result) {
        TERN_ASSIGN_OR_RETURN(result, string_search_method(text, name, args, budget));
    }
    if (!result) result = string_predicate(text, name);
    if (result) return std::move(*result);
    if (name == "center" || name == "ljust" || name == "rjust") return pad(text, args, name);
    if (name == "zfill") return zfill(text, args);
    if (name == "format") return format_string(text, args, budget);
    return invalid_argument("'str' object has no method '" + std::string(name) + "'");
}

Result<Value> call_dict_method(const Value& receiver, std::string_view name, const CallArgs& args, Budget& budget) {
    const Dict& dict = receiver.as_dict();
    TERN_RETURN_IF_ERROR(budget.charge_items(dict.size() + 1));
    if (name == "get") {
        TERN_ASSIGN_OR_RETURN(auto bound, bind_args(name, args, {"key", "default"}, {Value::none()}));
        if (const Value* found = dict.find(bound[0])) return *found;
        return bound[1];
    }
    if (!args.positional.empty() || !args.keywords.empty()) {
        return invalid_argument("dict." + std::string(name) + "() takes no arguments");
    }
    List items;
    items.reserve(dict.size());
    for (const auto& [key, value] : dict.entries) {
        if (name == "items") {
            items.push_back(Value::tuple({key, value}));
        } else {
            items.push_back(name == "keys" ? key : value);
        }
    }
    return Value::list(std::move(items));
}

Result<Value> call_list_method(const List& items, std::string_view name, const CallArgs& args, Budget& budget) {
    TERN_RETURN_IF_ERROR(budget.charge_items(items.size() + 1));
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args(name, args, {"value"}));
    // Each item is compared with the value, walking at most the value whole.
    TERN_RETURN_IF_ERROR(budget.charge_items(items.size() * std::min<uint64_t>(bound[0].weight(), UINT32_MAX)));
    int64_t count = 0;
    for (size_t i = 0; i < items.size(); ++i) {
        if (!values_equal(items[i], bound[0])) continue;
        if (name == "index") return Value::integer(static_cast<int64_t>(i));
        ++count;
    }
    if (name == "index") return invalid_argument(bound[0].brief_repr() + " is not in list");
    return Value::integer(count);
}

}  // namespace

bool has_method(const Value& receiver, std::string_view name) {
    if (receiver.is_string()) return contains(kStringMethods, name);
    if (receiver.is_mapping()) return contains(kDictMethods, name) || contains(kDictUnsafe, name);
    if (receiver.is_list()) return contains(kListMethods, name) || (!receiver.is_tuple() && contains(kListUnsafe, name));
    return false;
}

Result<Value> call_method(const Value& receiver, std::string_view name, const CallArgs& args, Budget& budget) {
    if (receiver.is_string()) return call_string_method(receiver.as_string(), name, args, budget);
    if (receiver.is_mapping()) {
        if (contains(kDictUnsafe, name)) return unsafe(receiver, name);
        return call_dict_method(receiver, name, args, budget);
    }
    if (receiver.is_list()) {
        if (contains(kListUnsafe, name)) return unsafe(receiver, name);
        return call_list_method(receiver.as_list(), name, args, budget);
    }
    return invalid_argument(std::string("'") + receiver.type_name() + "' object has no method '" + std::string(name) + "'");
}

}  // namespace tern::chat::jinja
