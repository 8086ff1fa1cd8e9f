// Attribute, item and slice lookup, and iteration, with Jinja2's rules (environment.getattr / getitem).
#include <algorithm>

#include "chat/builtins.h"
#include "chat/py_string.h"

namespace tern::chat::jinja {
namespace {

std::string object_name(const Value& value) { return std::string("'") + value.type_name() + " object'"; }

Value missing_attribute(const Value& object, std::string_view name) {
    return Value::undefined(object_name(object) + " has no attribute '" + std::string(name) + "'");
}

Value missing_element(const Value& object, const Value& key) {
    return Value::undefined(object_name(object) + " has no element " + key.brief_repr());
}

Value bound_method(const Value& receiver, std::string_view name) {
    Callable callable;
    callable.kind = Callable::Kind::kMethod;
    callable.name = std::string(name);
    callable.receiver = receiver;
    return Value::callable(std::move(callable));
}

// Python's slice index clamping (PySlice_AdjustIndices) for one bound.
int64_t clamp_index(int64_t index, int64_t length, int64_t step) {
    if (index < 0) {
        index += length;
        if (index < 0) index = step < 0 ? -1 : 0;
    } else if (index >= length) {
        index = step < 0 ? length - 1 : length;
    }
    return index;
}

Result<int64_t> slice_bound(const Value& bound, int64_t fallback) {
    if (bound.is_undefined() || bound.is_none()) return fallback;
    if (!bound.is_integral()) return invalid_argument("slice indices must be integers or None");
    return bound.as_int();
}

}  // namespace

Status undefined_error(const Value& value) {
    if (!value.undefined_hint().empty()) return invalid_argument(value.undefined_hint());
    return invalid_argument("a value is undefined");
}

Result<Value> get_attribute(const Value& object, std::string_view name) {
    if (object.is_undefined()) return undefined_error(object);
    if (has_method(object, name)) return bound_method(object, name);
    if (object.is_dict()) {
        if (const Value* found = object.as_dict().find(name)) return *found;
    }
    return missing_attribute(object, name);
}

Result<Value> get_item(const Value& object, const Value& key) {
    if (object.is_undefined()) return undefined_error(object);
    if (object.is_dict()) {
        if (const Value* found = object.as_dict().find(key)) return *found;
    } else if ((object.is_list() || object.is_string()) && key.is_integral()) {
        if (object.is_list()) {
            const List& items = object.as_list();
            int64_t index = key.as_int();
            if (index < 0) index += static_cast<int64_t>(items.size());
            if (index >= 0 && index < static_cast<int64_t>(items.size())) return items[static_cast<size_t>(index)];
        } else {
            const std::vector<size_t> offsets = code_point_offsets(object.as_string());
            const int64_t length = static_cast<int64_t>(offsets.size()) - 1;
            int64_t index = key.as_int();
            if (index < 0) index += length;
            if (index >= 0 && index < length) {
                const size_t begin = offsets[static_cast<size_t>(index)];
                return Value::string(object.as_string().substr(begin, offsets[static_cast<size_t>(index) + 1] - begin));
            }
        }
        return missing_element(object, key);
    }
    // A string key that is not an item falls back to the attribute, so x['items'] finds dict.items.
    if (key.is_string()) {
        if (has_method(object, key.as_string())) return bound_method(object, key.as_string());
        return missing_attribute(object, key.as_string());
    }
    return missing_element(object, key);
}

Result<Value> slice_value(const Value& object, const Value& start, const Value& stop, const Value& step,
                          Budget& budget) {
    if (object.is_undefined()) return undefined_error(object);
    // Jinja compiles slices to plain Python subscripts, without the environment's forgiving getitem.
    if (object.is_mapping()) return invalid_argument("unhashable type: 'slice'");
    if (!object.is_list() && !object.is_string()) {
        return invalid_argument(std::string("'") + object.type_name() + "' object is not subscriptable");
    }
    TERN_ASSIGN_OR_RETURN(const int64_t stride, slice_bound(step, 1));
    if (stride == 0) return invalid_argument("slice step cannot be zero");
    std::vector<size_t> offsets;
    int64_t length = 0;
    if (object.is_list()) {
        length = static_cast<int64_t>(object.as_list().size());
    } else {
        offsets = code_point_offsets(object.as_string());
        length = static_cast<int64_t>(offsets.size()) - 1;
    }
    TERN_ASSIGN_OR_RETURN(int64_t first, slice_bound(start, stride < 0 ? length - 1 : 0));
    TERN_ASSIGN_OR_RETURN(int64_t last, slice_bound(stop, stride < 0 ? -1 : length));
    if (!start.is_undefined() && !start.is_none()) first = clamp_index(first, length, stride);
    if (!stop.is_undefined() && !stop.is_none()) last = clamp_index(last, length, stride);
    std::vector<int64_t> picked;
    for (int64_t i = first; stride > 0 ? i < last : i > last; i += stride) picked.push_back(i);
    TERN_RETURN_IF_ERROR(budget.charge_items(picked.size() + 1));
    if (object.is_list()) {
        List items;
        items.reserve(picked.size());
        for (int64_t i : picked) items.push_back(object.as_list()[static_cast<size_t>(i)]);
        return object.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    std::string text;
    for (int64_t i : picked) {
        const size_t begin = offsets[static_cast<size_t>(i)];
        text.append(object.as_string(), begin, offsets[static_cast<size_t>(i) + 1] - begin);
    }
    return Value::string(std::move(text));
}

Result<List> iterate(const Value& value) {
    switch (value.kind()) {
        case ValueKind::kUndefined:
            return List{};  // Jinja's Undefined iterates as empty
        case ValueKind::kList:
            return value.as_list();
        case ValueKind::kString: {
            List chars;
            const std::string& text = value.as_string();
            for (size_t pos = 0; pos < text.size();) {
                const size_t begin = pos;
                decode_utf8(text, pos);
                chars.push_back(Value::string(text.substr(begin, pos - begin)));
            }
            return chars;
        }
        case ValueKind::kDict:
            if (!value.is_namespace()) {
                List keys;
                keys.reserve(value.as_dict().size());
                for (const auto& entry : value.as_dict().entries) keys.push_back(entry.first);
                return keys;
            }
            [[fallthrough]];
        default:
            return invalid_argument(std::string("'") + value.type_name() + "' object is not iterable");
    }
}

}  // namespace tern::chat::jinja
