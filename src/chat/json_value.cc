#include "chat/json_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/py_string.h"

namespace tern::chat::jinja {
namespace {

Result<Value> from_json_at(const nlohmann::ordered_json& json, int depth) {
    if (depth > kMaxValueDepth) return invalid_argument("JSON value nested deeper than " + std::to_string(kMaxValueDepth));
    switch (json.type()) {
        case nlohmann::ordered_json::value_t::null:
            return Value::none();
        case nlohmann::ordered_json::value_t::boolean:
            return Value::boolean(json.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer:
            return Value::integer(json.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const uint64_t number = json.get<uint64_t>();
            if (number > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(number));
            return Value::integer(static_cast<int64_t>(number));
        }
        case nlohmann::ordered_json::value_t::number_float:
            return Value::number(json.get<double>());
        case nlohmann::ordered_json::value_t::string:
            return Value::string(json.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            List items;
            items.reserve(json.size());
            for (const auto& item : json) {
                TERN_ASSIGN_OR_RETURN(Value value, from_json_at(item, depth + 1));
                items.push_back(std::move(value));
            }
            return Value::list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            Dict dict;
            for (const auto& [key, item] : json.items()) {
                TERN_ASSIGN_OR_RETURN(Value value, from_json_at(item, depth + 1));
                dict.set(Value::string(key), std::move(value));
            }
            return Value::dict(std::move(dict));
        }
        default:
            return invalid_argument("unsupported JSON value (binary or discarded)");
    }
}

void append_escaped(std::string& out, std::string_view text, bool ensure_ascii) {
    char buffer[16];
    out += '"';
    for (size_t pos = 0; pos < text.size();) {
        const size_t start = pos;
        const char32_t cp = decode_utf8(text, pos);
        switch (cp) {
            case '"': out += "\\\""; continue;
            case '\\': out += "\\\\"; continue;
            case '\n': out += "\\n"; continue;
            case '\r': out += "\\r"; continue;
            case '\t': out += "\\t"; continue;
            case '\b': out += "\\b"; continue;
            case '\f': out += "\\f"; continue;
            default: break;
        }
        if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
            if (cp >= 0x10000) {
                const char32_t v = cp - 0x10000;
                std::snprintf(buffer, sizeof(buffer), "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                              static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
            } else {
                std::snprintf(buffer, sizeof(buffer), "\\u%04x", static_cast<unsigned>(cp));
            }
            out += buffer;
        } else {
            out.append(text.substr(start, pos - start));
        }
    }
    out += '"';
}

std::string float_json(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value < 0 ? "-Infinity" : "Infinity";
    return py_float_repr(value);
}

Result<std::string> key_text(const Value& key) {
    switch (key.kind()) {
        case ValueKind::kString: return key.as_string();
        case ValueKind::kInt: return std::to_string(key.as_int());
        case ValueKind::kFloat: return float_json(key.as_double());
        case ValueKind::kBool: return std::string(key.as_bool() ? "true" : "false");
        case ValueKind::kNone: return std::string("null");
        default:
            return invalid_argument(std::string("keys must be str, int, float, bool or None, not ") + key.type_name());
    }
}

class Dumper {
public:
    explicit Dumper(const JsonDumpOptions& options) : options_(options) {
        item_separator_ = options.item_separator.value_or(options.indent ? "," : ", ");
        key_separator_ = options.key_separator.value_or(": ");
    }

    Status dump(const Value& value, int depth) {
        if (depth > kMaxWalkDepth) return invalid_argument("Circular reference detected (or a value nested too deeply)");
        switch (value.kind()) {
            case ValueKind::kNone: out_ += "null"; return Status::ok();
            case ValueKind::kBool: out_ += value.as_bool() ? "true" : "false"; return Status::ok();
            case ValueKind::kInt: out_ += std::to_string(value.as_int()); return Status::ok();
            case ValueKind::kFloat: out_ += float_json(value.as_double()); return Status::ok();
            case ValueKind::kString: append_escaped(out_, value.as_string(), options_.ensure_ascii); return Status::ok();
            case ValueKind::kList: return dump_list(value.as_list(), depth);
            case ValueKind::kDict:
                if (!value.is_namespace()) return dump_dict(value.as_dict(), depth);
                [[fallthrough]];
            default:
                return invalid_argument(std::string("Object of type ") + value.type_name() + " is not JSON serializable");
        }
    }

    std::string take() { return std::move(out_); }

private:
    void newline(int depth) {
        if (!options_.indent) return;
        out_ += '\n';
        for (int i = 0; i < depth; ++i) out_ += *options_.indent;
    }

    Status dump_list(const List& items, int depth) {
        if (items.empty()) {
            out_ += "[]";
            return Status::ok();
        }
        out_ += '[';
        for (size_t i = 0; i < items.size(); ++i) {
            if (i > 0) out_ += item_separator_;
            newline(depth + 1);
            TERN_RETURN_IF_ERROR(dump(items[i], depth + 1));
        }
        newline(depth);
        out_ += ']';
        return Status::ok();
    }

    Status dump_dict(const Dict& dict, int depth) {
        if (dict.entries.empty()) {
            out_ += "{}";
            return Status::ok();
        }
        std::vector<const std::pair<Value, Value>*> entries;
        for (const auto& entry : dict.entries) entries.push_back(&entry);
        if (options_.sort_keys) {
            bool comparable = true;
            std::stable_sort(entries.begin(), entries.end(), [&](const auto* a, const auto* b) {
                const std::optional<int> order = compare_values(a->first, b->first);
                comparable = comparable && order.has_value();
                return order.value_or(0) < 0;
            });
            if (!comparable) return invalid_argument("'<' not supported between the keys of a dict given to tojson");
        }
        out_ += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
            if (i > 0) out_ += item_separator_;
            newline(depth + 1);
            TERN_ASSIGN_OR_RETURN(std::string key, key_text(entries[i]->first));
            append_escaped(out_, key, options_.ensure_ascii);
            out_ += key_separator_;
            TERN_RETURN_IF_ERROR(dump(entries[i]->second, depth + 1));
        }
        newline(depth);
        out_ += '}';
        return Status::ok();
    }

    const JsonDumpOptions& options_;
    std::string item_separator_;
    std::string key_separator_;
    std::string out_;
};

}  // namespace

Result<Value> value_from_json(const nlohmann::ordered_json& json) { return from_json_at(json, 0); }

Result<std::string> dump_json(const Value& value, const JsonDumpOptions& options) {
    Dumper dumper(options);
    TERN_RETURN_IF_ERROR(dumper.dump(value, 0));
    return dumper.take();
}

}  // namespace tern::chat::jinja
