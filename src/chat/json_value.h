// Conversions between interpreter values and JSON: nlohmann::json in (a request's messages and tools), and
// Python's json.dumps out, byte for byte, because Hugging Face replaces Jinja's |tojson with json.dumps.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/status.h"
#include "chat/value.h"

namespace tern::chat::jinja {

// JSON objects become insertion-ordered dicts, arrays lists, numbers int (when integral) or float, null None.
// Fails on input nested deeper than kMaxValueDepth.
Result<Value> value_from_json(const nlohmann::ordered_json& json);

struct JsonDumpOptions {
    bool ensure_ascii = false;               // HF's default (Python's is true)
    std::optional<std::string> indent;       // the indent unit; unset is a single line
    std::optional<std::string> item_separator;  // default ", " (",\n" style when indented: ",")
    std::optional<std::string> key_separator;   // default ": "
    bool sort_keys = false;
};

// json.dumps(value, ...). Undefined, callables and namespaces are not serializable, nor are containers nested deeper
// than kMaxWalkDepth (Python's "Circular reference detected").
Result<std::string> dump_json(const Value& value, const JsonDumpOptions& options);

}  // namespace tern::chat::jinja
