// Jinja2's tests ("x is defined"), the `in` operator, and the global functions: Jinja's range / namespace / dict
// and the raise_exception / strftime_now that Hugging Face's apply_chat_template adds.
#include <cmath>
#include <ctime>

#include "chat/builtins.h"
#include "chat/operators.h"
#include "chat/py_string.h"

namespace tern::chat::jinja {
namespace {

// The sandbox's limit on range(): longer ranges fail (jinja2.sandbox.MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

// Tests that take no argument besides the value refuse extra ones, as Python would.
template <bool (*kPredicate)(const Value&)>
Result<bool> unary_test(const Value& value, const CallArgs& args) {
    if (!args.positional.empty() || !args.keywords.empty()) {
        return invalid_argument("test takes 1 positional argument but " +
                                std::to_string(1 + args.positional.size() + args.keywords.size()) + " were given");
    }
    return kPredicate(value);
}

bool is_defined(const Value& v) { return !v.is_undefined(); }
bool is_undefined(const Value& v) { return v.is_undefined(); }
bool is_none(const Value& v) { return v.is_none(); }
bool is_boolean(const Value& v) { return v.is_bool(); }
bool is_false(const Value& v) { return v.is_bool() && !v.as_bool(); }
bool is_true(const Value& v) { return v.is_bool() && v.as_bool(); }
bool is_integer(const Value& v) { return v.is_int(); }
bool is_float(const Value& v) { return v.is_float(); }
bool is_number(const Value& v) { return v.is_numeric(); }
bool is_string(const Value& v) { return v.is_string(); }
bool is_mapping(const Value& v) { return v.is_mapping(); }
// Jinja's Undefined defines __call__ (to fail), so Python's callable() says yes.
bool is_callable(const Value& v) { return v.is_callable() || v.is_undefined(); }
bool is_escaped(const Value&) { return false; }
// Python: iter() works on strings, lists, dicts, and Jinja's Undefined; len() and [] make a sequence.
bool is_iterable(const Value& v) { return v.is_undefined() || v.is_string() || v.is_list() || v.is_mapping(); }
bool is_lower(const Value& v) {
    const std::string text = v.str();
    return py_lower(text) == text && py_upper(text) != text;
}
bool is_upper(const Value& v) {
    const std::string text = v.str();
    return py_upper(text) == text && py_lower(text) != text;
}
bool is_filter(const Value& v) { return v.is_string() && find_filter(v.as_string()) != nullptr; }
bool is_test(const Value& v) { return v.is_string() && find_test(v.as_string()) != nullptr; }

Result<Value> one_arg(std::string_view test, const CallArgs& args) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args(test, args, {"other"}));
    return bound[0];
}

Result<bool> test_sameas(const Value& v, const CallArgs& args) {
    TERN_ASSIGN_OR_RETURN(const Value other, one_arg("sameas", args));
    if (v.identity() != nullptr || other.identity() != nullptr) return v.identity() == other.identity();
    if (v.is_none() || v.is_bool() || v.is_undefined()) return v.kind() == other.kind() && values_equal(v, other);
    return false;
}

Result<bool> test_eq(const Value& v, const CallArgs& args) {
    TERN_ASSIGN_OR_RETURN(const Value other, one_arg("eq", args));
    return values_equal(v, other);
}

Result<bool> test_ne(const Value& v, const CallArgs& args) {
    TERN_ASSIGN_OR_RETURN(const bool equal, test_eq(v, args));
    return !equal;
}

Result<bool> ordered(const Value& v, const CallArgs& args, bool (*accept)(int)) {
    TERN_ASSIGN_OR_RETURN(const Value other, one_arg("comparison", args));
    const std::optional<int> order = compare_values(v, other);
    if (!order) {
        return invalid_argument(std::string("comparison not supported between instances of '") + v.type_name() +
                                "' and '" + other.type_name() + "'");
    }
    return accept(*order);
}

Result<bool> test_lt(const Value& v, const CallArgs& a) { return ordered(v, a, [](int o) { return o < 0; }); }
Result<bool> test_le(const Value& v, const CallArgs& a) { return ordered(v, a, [](int o) { return o <= 0; }); }
Result<bool> test_gt(const Value& v, const CallArgs& a) { return ordered(v, a, [](int o) { return o > 0; }); }
Result<bool> test_ge(const Value& v, const CallArgs& a) { return ordered(v, a, [](int o) { return o >= 0; }); }

Result<bool> test_in(const Value& v, const CallArgs& args) {
    TERN_ASSIGN_OR_RETURN(const Value container, one_arg("in", args));
    return value_in(v, container);
}

// odd, even and divisibleby compute Python's value % n, which works on floats too (0.5 is neither odd nor even).
Result<bool> remainder_is(const Value& v, const Value& divisor, int64_t expected) {
    static const RenderOptions kOptions;  // the remainder of two numbers (or a short format) costs nothing to speak of
    Budget budget(kOptions);
    TERN_ASSIGN_OR_RETURN(const Value remainder, binary_op("%", v, divisor, budget));
    return values_equal(remainder, Value::integer(expected));
}

Result<bool> test_odd(const Value& v, const CallArgs& args) {
    if (!args.positional.empty() || !args.keywords.empty()) return invalid_argument("odd takes no argument");
    return remainder_is(v, Value::integer(2), 1);
}

Result<bool> test_even(const Value& v, const CallArgs& args) {
    if (!args.positional.empty() || !args.keywords.empty()) return invalid_argument("even takes no argument");
    return remainder_is(v, Value::integer(2), 0);
}

Result<bool> test_divisibleby(const Value& v, const CallArgs& args) {
    TERN_ASSIGN_OR_RETURN(const Value divisor, one_arg("divisibleby", args));
    return remainder_is(v, divisor, 0);
}

struct TestEntry {
    std::string_view name;
    TestFn fn;
};

constexpr TestEntry kTests[] = {
    {"!=", test_ne},
    {"<", test_lt},
    {"<=", test_le},
    {"==", test_eq},
    {">", test_gt},
    {">=", test_ge},
    {"boolean", unary_test<is_boolean>},
    {"callable", unary_test<is_callable>},
    {"defined", unary_test<is_defined>},
    {"divisibleby", test_divisibleby},
    {"eq", test_eq},
    {"equalto", test_eq},
    {"escaped", unary_test<is_escaped>},
    {"even", test_even},
    {"false", unary_test<is_false>},
    {"filter", unary_test<is_filter>},
    {"float", unary_test<is_float>},
    {"ge", test_ge},
    {"greaterthan", test_gt},
    {"gt", test_gt},
    {"in", test_in},
    {"integer", unary_test<is_integer>},
    {"iterable", unary_test<is_iterable>},
    {"le", test_le},
    {"lessthan", test_lt},
    {"lower", unary_test<is_lower>},
    {"lt", test_lt},
    {"mapping", unary_test<is_mapping>},
    {"ne", test_ne},
    {"none", unary_test<is_none>},
    {"number", unary_test<is_number>},
    {"odd", test_odd},
    {"sameas", test_sameas},
    {"sequence", unary_test<is_iterable>},
    {"string", unary_test<is_string>},
    {"test", unary_test<is_test>},
    {"true", unary_test<is_true>},
    {"undefined", unary_test<is_undefined>},
    {"upper", unary_test<is_upper>},
};

Result<Value> global_range(const CallArgs& args, Budget& budget) {
    if (!args.keywords.empty()) return invalid_argument("range() takes no keyword arguments");
    const std::vector<Value>& p = args.positional;
    if (p.empty() || p.size() > 3) return invalid_argument("range expected 1 to 3 arguments");
    for (const Value& arg : p) {
        if (!arg.is_integral()) {
            return invalid_argument(std::string("'") + arg.type_name() + "' object cannot be interpreted as an integer");
        }
    }
    const int64_t start = p.size() == 1 ? 0 : p[0].as_int();
    const int64_t stop = p.size() == 1 ? p[0].as_int() : p[1].as_int();
    const int64_t step = p.size() == 3 ? p[2].as_int() : 1;
    if (step == 0) return invalid_argument("range() arg 3 must not be zero");
    const long double count = std::ceil((static_cast<long double>(stop) - start) / step);
    if (count > kMaxRange) {
        return invalid_argument("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    }
    List items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) items.push_back(Value::integer(i));
    TERN_RETURN_IF_ERROR(budget.charge_items(items.size() + 1));
    return Value::list(std::move(items));
}

// dict(**kwargs) / dict(mapping) / namespace(...): Python's dict constructor.
Result<Dict> dict_from_args(const CallArgs& args) {
    Dict dict;
    if (args.positional.size() > 1) return invalid_argument("dict expected at most 1 argument");
    if (!args.positional.empty()) {
        const Value& source = args.positional[0];
        if (source.is_dict()) {
            dict = source.as_dict();
        } else {
            TERN_ASSIGN_OR_RETURN(const List pairs, iterate(source));
            for (const Value& pair : pairs) {
                if (!pair.is_list() || pair.as_list().size() != 2) {
                    return invalid_argument("dictionary update sequence element has the wrong length (2 needed)");
                }
                dict.set(pair.as_list()[0], pair.as_list()[1]);
            }
        }
    }
    for (const auto& [key, value] : args.keywords) dict.set(Value::string(key), value);
    return dict;
}

Result<Value> global_strftime_now(const CallArgs& args, const RenderOptions& options) {
    TERN_ASSIGN_OR_RETURN(auto bound, bind_args("strftime_now", args, {"format"}));
    if (!bound[0].is_string()) return invalid_argument("strftime_now() argument must be str");
    std::tm when{};
    if (options.now) {
        when = *options.now;
        std::tm copy = when;
        timegm(&copy);  // fills in the weekday and day of year from the date, in any time zone
        when.tm_wday = copy.tm_wday;
        when.tm_yday = copy.tm_yday;
    } else {
        const std::time_t now = std::time(nullptr);
        localtime_r(&now, &when);
    }
    const std::string& format = bound[0].as_string();
    if (format.empty()) return Value::string("");
    for (size_t size = 256; size <= 65536; size *= 4) {
        std::string out(size, '\0');
        const size_t written = std::strftime(out.data(), out.size(), format.c_str(), &when);
        if (written > 0) {
            out.resize(written);
            return Value::string(std::move(out));
        }
    }
    return Value::string("");
}

}  // namespace

TestFn find_test(std::string_view name) {
    for (const TestEntry& entry : kTests) {
        if (entry.name == name) return entry.fn;
    }
    return nullptr;
}

Result<bool> run_test(TestFn test, const Value& input, const CallArgs& args, Budget& budget) {
    TERN_RETURN_IF_ERROR(budget.charge_walk(input));
    for (const Value& arg : args.positional) TERN_RETURN_IF_ERROR(budget.charge_walk(arg));
    for (const auto& [name, arg] : args.keywords) TERN_RETURN_IF_ERROR(budget.charge_walk(arg));
    return test(input, args);
}

Result<bool> value_in(const Value& item, const Value& container) {
    switch (container.kind()) {
        case ValueKind::kUndefined:
            return false;
        case ValueKind::kString:
            if (!item.is_string()) {
                return invalid_argument(std::string("'in <string>' requires string as left operand, not ") + item.type_name());
            }
            return container.as_string().find(item.as_string()) != std::string::npos;
        case ValueKind::kList:
            for (const Value& element : container.as_list()) {
                if (values_equal(element, item)) return true;
            }
            return false;
        case ValueKind::kDict:
            if (!container.is_namespace()) {
                if ((item.is_list() && !item.is_tuple()) || item.is_dict()) {
                    return invalid_argument(std::string("unhashable type: '") + item.type_name() + "'");
                }
                return container.as_dict().find(item) != nullptr;
            }
            [[fallthrough]];
        default:
            return invalid_argument(std::string("argument of type '") + container.type_name() + "' is not iterable");
    }
}

bool is_global_function(std::string_view name) {
    return name == "range" || name == "namespace" || name == "dict" || name == "raise_exception" ||
           name == "strftime_now";
}

Result<Value> call_global(std::string_view name, const CallArgs& args, Budget& budget) {
    if (name == "range") return global_range(args, budget);
    if (name == "dict" || name == "namespace") {
        TERN_ASSIGN_OR_RETURN(Dict dict, dict_from_args(args));
        TERN_RETURN_IF_ERROR(budget.charge_items(dict.size() + 1));
        return name == "dict" ? Value::dict(std::move(dict)) : Value::namespace_object(std::move(dict));
    }
    if (name == "raise_exception") {
        TERN_ASSIGN_OR_RETURN(auto bound, bind_args(name, args, {"message"}));
        // The template's own message, cut to a length an error message can carry.
        constexpr size_t kMaxMessageBytes = 4096;
        std::string message = bound[0].str(kMaxMessageBytes);
        if (message.size() > kMaxMessageBytes) message.resize(kMaxMessageBytes);
        return invalid_argument(message);
    }
    if (name == "strftime_now") return global_strftime_now(args, budget.options());
    return invalid_argument(quoted(name) + " is undefined");
}

}  // namespace tern::chat::jinja
