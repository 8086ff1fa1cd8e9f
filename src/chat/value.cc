#include "chat/value.h"

#include <algorithm>
#include <cmath>

#include "chat/py_string.h"

namespace tern::chat::jinja {
namespace {

uint64_t saturating_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

int max_depth(const List& items) {
    int depth = 0;
    for (const Value& item : items) depth = std::max(depth, item.depth());
    return depth;
}

// Appends str() or repr() of `value` to `out`, stopping once `out` holds more than `max_bytes`: a hostile template's
// list of a million items would otherwise be printed in full (tens of MB) before any limit could look at it.
void append_repr(const Value& value, int depth, bool as_str, std::string& out, size_t max_bytes);

void append_sequence(const List& items, bool tuple, int depth, std::string& out, size_t max_bytes) {
    out += tuple ? "(" : "[";
    for (size_t i = 0; i < items.size() && out.size() <= max_bytes; ++i) {
        if (i > 0) out += ", ";
        append_repr(items[i], depth + 1, false, out, max_bytes);
    }
    if (tuple && items.size() == 1) out += ",";
    out += tuple ? ")" : "]";
}

void append_dict(const Dict& dict, int depth, std::string& out, size_t max_bytes) {
    out += "{";
    for (size_t i = 0; i < dict.entries.size() && out.size() <= max_bytes; ++i) {
        if (i > 0) out += ", ";
        append_repr(dict.entries[i].first, depth + 1, false, out, max_bytes);
        out += ": ";
        append_repr(dict.entries[i].second, depth + 1, false, out, max_bytes);
    }
    out += "}";
}

void append_repr(const Value& value, int depth, bool as_str, std::string& out, size_t max_bytes) {
    if (depth > kMaxWalkDepth) {
        out += "...";
        return;
    }
    switch (value.kind()) {
        case ValueKind::kUndefined:
            if (!as_str) out += "Undefined";
            return;
        case ValueKind::kNone:
            out += "None";
            return;
        case ValueKind::kBool:
            out += value.as_bool() ? "True" : "False";
            return;
        case ValueKind::kInt:
            out += std::to_string(value.as_int());
            return;
        case ValueKind::kFloat:
            out += py_float_repr(value.as_double());
            return;
        case ValueKind::kString:
            out += as_str ? value.as_string() : py_repr_string(value.as_string());
            return;
        case ValueKind::kList:
            append_sequence(value.as_list(), value.is_tuple(), depth, out, max_bytes);
            return;
        case ValueKind::kDict:
            if (value.is_namespace()) out += "<Namespace ";
            append_dict(value.as_dict(), depth, out, max_bytes);
            if (value.is_namespace()) out += ">";
            return;
        case ValueKind::kCallable: {
            const Callable& callable = value.as_callable();
            out += callable.kind == Callable::Kind::kMacro ? "<Macro '" + callable.name + "'>"
                                                           : "<built-in function " + callable.name + ">";
            return;
        }
    }
}

bool equal_at(const Value& a, const Value& b, int depth);

bool dicts_equal(const Dict& a, const Dict& b, int depth) {
    if (a.size() != b.size()) return false;
    for (const auto& [key, value] : a.entries) {
        const Value* other = b.find(key);
        if (other == nullptr || !equal_at(value, *other, depth + 1)) return false;
    }
    return true;
}

bool equal_at(const Value& a, const Value& b, int depth) {
    if (depth > kMaxWalkDepth) return false;
    if (a.is_numeric() && b.is_numeric()) {
        if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
        return a.as_double() == b.as_double();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case ValueKind::kUndefined:
        case ValueKind::kNone:
            return true;
        case ValueKind::kString:
            return a.as_string() == b.as_string();
        case ValueKind::kList: {
            if (a.is_tuple() != b.is_tuple() || a.as_list().size() != b.as_list().size()) return false;
            for (size_t i = 0; i < a.as_list().size(); ++i) {
                if (!equal_at(a.as_list()[i], b.as_list()[i], depth + 1)) return false;
            }
            return true;
        }
        case ValueKind::kDict:
            // Namespaces compare by identity, like any Python object without __eq__.
            if (a.is_namespace() || b.is_namespace()) return a.identity() == b.identity();
            return dicts_equal(a.as_dict(), b.as_dict(), depth);
        case ValueKind::kCallable:
            return a.identity() == b.identity();
        default:
            return false;
    }
}

std::optional<int> compare_at(const Value& a, const Value& b, int depth) {
    if (depth > kMaxWalkDepth) return std::nullopt;
    if (a.is_numeric() && b.is_numeric()) {
        if (a.is_integral() && b.is_integral()) return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
        const double x = a.as_double();
        const double y = b.as_double();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.is_string() && b.is_string()) {
        // Byte order of UTF-8 is code point order, which is Python's string order.
        const int c = a.as_string().compare(b.as_string());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        const List& x = a.as_list();
        const List& y = b.as_list();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (equal_at(x[i], y[i], depth + 1)) continue;
            return compare_at(x[i], y[i], depth + 1);
        }
        return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    }
    return std::nullopt;
}

}  // namespace

Value Value::undefined(std::string hint) {
    Value value;
    if (!hint.empty()) value.text_ = std::make_shared<const std::string>(std::move(hint));
    return value;
}

Value Value::none() {
    Value value;
    value.kind_ = ValueKind::kNone;
    return value;
}

Value Value::boolean(bool flag) {
    Value value;
    value.kind_ = ValueKind::kBool;
    value.flag_ = flag;
    return value;
}

Value Value::integer(int64_t number) {
    Value value;
    value.kind_ = ValueKind::kInt;
    value.int_ = number;
    return value;
}

Value Value::number(double number) {
    Value value;
    value.kind_ = ValueKind::kFloat;
    value.float_ = number;
    return value;
}

Value Value::string(std::string text) {
    Value value;
    value.kind_ = ValueKind::kString;
    value.weight_ = 1 + text.size() / 64;
    if (!text.empty()) value.text_ = std::make_shared<const std::string>(std::move(text));
    return value;
}

Value Value::list(List items) {
    Value value;
    value.kind_ = ValueKind::kList;
    value.depth_ = 1 + max_depth(items);
    for (const Value& item : items) value.weight_ = saturating_add(value.weight_, item.weight());
    value.list_ = std::make_shared<List>(std::move(items));
    return value;
}

Value Value::tuple(List items) {
    Value value = list(std::move(items));
    value.flag_ = true;
    return value;
}

Value Value::dict(Dict entries) {
    Value value;
    value.kind_ = ValueKind::kDict;
    int depth = 0;
    for (const auto& [key, item] : entries.entries) {
        depth = std::max({depth, key.depth(), item.depth()});
        value.weight_ = saturating_add(value.weight_, saturating_add(key.weight(), item.weight()));
    }
    value.depth_ = 1 + depth;
    value.dict_ = std::make_shared<Dict>(std::move(entries));
    return value;
}

Value Value::namespace_object(Dict entries) {
    Value value = dict(std::move(entries));
    value.flag_ = true;
    value.weight_ = 1;
    return value;
}

Value Value::callable(Callable callable) {
    Value value;
    value.kind_ = ValueKind::kCallable;
    value.callable_ = std::make_shared<const Callable>(std::move(callable));
    return value;
}

const std::string& Value::empty_string() {
    static const std::string empty;
    return empty;
}

const void* Value::identity() const {
    if (list_) return list_.get();
    if (dict_) return dict_.get();
    if (callable_) return callable_.get();
    return nullptr;
}

bool Value::truthy() const {
    switch (kind_) {
        case ValueKind::kUndefined:
        case ValueKind::kNone:
            return false;
        case ValueKind::kBool:
            return flag_;
        case ValueKind::kInt:
            return int_ != 0;
        case ValueKind::kFloat:
            return float_ != 0;
        case ValueKind::kString:
            return text_ && !text_->empty();
        case ValueKind::kList:
            return !list_->empty();
        case ValueKind::kDict:
            return flag_ || dict_->size() > 0;  // a namespace is an object, always true
        case ValueKind::kCallable:
            return true;
    }
    return false;
}

std::string Value::str(size_t max_bytes) const {
    if (is_string()) return as_string().size() > max_bytes ? as_string().substr(0, max_bytes + 1) : as_string();
    std::string out;
    append_repr(*this, 0, true, out, max_bytes);
    return out;
}

std::string Value::repr(size_t max_bytes) const {
    std::string out;
    append_repr(*this, 0, false, out, max_bytes);
    return out;
}

std::string Value::brief_repr() const {
    constexpr size_t kBriefBytes = 200;
    std::string out = repr(kBriefBytes);
    if (out.size() > kBriefBytes) {
        out.resize(kBriefBytes);
        out += "...";
    }
    return out;
}

const char* Value::type_name() const {
    switch (kind_) {
        case ValueKind::kUndefined:
            return "Undefined";
        case ValueKind::kNone:
            return "NoneType";
        case ValueKind::kBool:
            return "bool";
        case ValueKind::kInt:
            return "int";
        case ValueKind::kFloat:
            return "float";
        case ValueKind::kString:
            return "str";
        case ValueKind::kList:
            return flag_ ? "tuple" : "list";
        case ValueKind::kDict:
            return flag_ ? "Namespace" : "dict";
        case ValueKind::kCallable:
            return "function";
    }
    return "object";
}

const Value* Dict::find(const Value& key) const {
    if (key.is_string()) return find(std::string_view(key.as_string()));
    for (const auto& [k, v] : entries) {
        if (values_equal(k, key)) return &v;
    }
    return nullptr;
}

const Value* Dict::find(std::string_view key) const {
    for (const auto& [k, v] : entries) {
        if (k.is_string() && k.as_string() == key) return &v;
    }
    return nullptr;
}

void Dict::set(Value key, Value value) {
    for (auto& [k, v] : entries) {
        if (values_equal(k, key)) {
            v = std::move(value);
            return;
        }
    }
    entries.emplace_back(std::move(key), std::move(value));
}

bool values_equal(const Value& a, const Value& b) { return equal_at(a, b, 0); }

std::optional<int> compare_values(const Value& a, const Value& b) { return compare_at(a, b, 0); }

}  // namespace tern::chat::jinja
