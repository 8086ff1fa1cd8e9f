#include "api/output_constraint.h"

#include <fmt/format.h>

namespace tern::api {
namespace {

using nlohmann::json;
using Kind = OutputConstraint::Kind;

FieldError error_at(const std::string& name, std::string message) { return FieldError{std::move(message), name}; }

// A schema given as an object (or true / false), or as JSON text (vLLM accepts both for guided_json).
std::optional<FieldError> decode_schema(const std::string& name, const json& value, OutputConstraint* out) {
    if (value.is_object() || value.is_boolean()) {
        out->schema = value;
        return std::nullopt;
    }
    if (value.is_string()) {
        json parsed = json::parse(value.get<std::string>(), nullptr, false);
        if (parsed.is_discarded() || !(parsed.is_object() || parsed.is_boolean())) {
            return error_at(name, fmt::format("'{}' holds text that is not a JSON Schema object", name));
        }
        out->schema = std::move(parsed);
        return std::nullopt;
    }
    return error_at(name, fmt::format("'{}' must be a JSON Schema: an object, or its JSON text", name));
}

std::optional<FieldError> decode_choices(const std::string& name, const json& value, OutputConstraint* out) {
    if (!value.is_array() || value.empty()) return error_at(name, fmt::format("'{}' must be a non-empty list of strings", name));
    for (const json& choice : value) {
        if (!choice.is_string()) return error_at(name, fmt::format("'{}' must hold strings only", name));
        out->choices.push_back(choice.get<std::string>());
    }
    return std::nullopt;
}

std::optional<FieldError> decode_text(const std::string& name, const json& value, std::string* out) {
    if (!value.is_string()) return error_at(name, fmt::format("'{}' must be a string", name));
    *out = value.get<std::string>();
    return std::nullopt;
}

// OpenAI's response_format; llama-server also takes {"type": "json_object", "schema": {...}}. Returns false in
// `constrained` for {"type": "text"}.
std::optional<FieldError> decode_response_format(const json& value, OutputConstraint* out, bool* constrained) {
    const std::string name = "response_format";
    const auto type = value.is_object() ? value.find("type") : value.end();
    if (type == value.end() || !type->is_string()) {
        return error_at(name, "'response_format' must be an object with 'type': \"text\", \"json_object\" or \"json_schema\"");
    }
    const std::string kind = type->get<std::string>();
    *constrained = kind != "text";
    if (kind == "text") return std::nullopt;
    if (kind == "json_object") {
        const auto schema = value.find("schema");
        if (schema == value.end() || schema->is_null()) return std::nullopt;
        out->kind = Kind::kJsonSchema;
        return decode_schema(name, *schema, out);
    }
    if (kind != "json_schema") {
        return error_at(name, fmt::format("'response_format' type \"{}\" is not one of \"text\", \"json_object\", "
                                          "\"json_schema\"", kind));
    }
    const auto wrapper = value.find("json_schema");
    if (wrapper == value.end() || !wrapper->is_object()) {
        return error_at(name, "'response_format' of type \"json_schema\" needs 'json_schema': {\"name\", \"schema\"}");
    }
    const auto schema = wrapper->find("schema");
    if (schema == wrapper->end() || schema->is_null()) return std::nullopt;  // OpenAI: no schema, any object
    out->kind = Kind::kJsonSchema;
    return decode_schema(name, *schema, out);
}

// vLLM's structured_outputs: exactly one of json, regex, choice, grammar, json_object.
std::optional<FieldError> decode_structured_outputs(const json& value, OutputConstraint* out) {
    const std::string name = "structured_outputs";
    if (!value.is_object()) return error_at(name, "'structured_outputs' must be an object");
    int set = 0;
    std::optional<FieldError> error;
    for (const auto& [key, item] : value.items()) {
        if (item.is_null() || (key == "json_object" && item == false)) continue;
        ++set;
        if (key == "json") {
            out->kind = Kind::kJsonSchema;
            error = decode_schema(name + ".json", item, out);
        } else if (key == "regex") {
            out->kind = Kind::kRegex;
            error = decode_text(name + ".regex", item, &out->text);
        } else if (key == "choice") {
            out->kind = Kind::kChoice;
            error = decode_choices(name + ".choice", item, out);
        } else if (key == "grammar") {
            out->kind = Kind::kGrammar;
            error = decode_text(name + ".grammar", item, &out->text);
        } else if (key == "json_object") {
            out->kind = Kind::kJsonObject;
        } else {
            return error_at(name, fmt::format("'structured_outputs' has '{}', which this server does not support "
                                              "(json, regex, choice, grammar, json_object)", key));
        }
        if (error) return error;
    }
    if (set != 1) return error_at(name, "'structured_outputs' must set exactly one of json, regex, choice, grammar, json_object");
    return std::nullopt;
}

// Decodes one field; `constrained` is false when the field asks for nothing (response_format text).
std::optional<FieldError> decode_field(const std::string& name, const json& value, OutputConstraint* out,
                                       bool* constrained) {
    *constrained = true;
    out->field = name;
    if (name == "response_format") return decode_response_format(value, out, constrained);
    if (name == "structured_outputs") return decode_structured_outputs(value, out);
    if (name == "guided_json" || name == "json_schema") {
        out->kind = Kind::kJsonSchema;
        return decode_schema(name, value, out);
    }
    if (name == "guided_choice") {
        out->kind = Kind::kChoice;
        return decode_choices(name, value, out);
    }
    out->kind = name == "guided_regex" ? Kind::kRegex : Kind::kGrammar;
    return decode_text(name, value, &out->text);
}

}  // namespace

void keep_schema_order(const nlohmann::ordered_json& body, OutputConstraint& constraint) {
    using ordered = nlohmann::ordered_json;
    if (constraint.kind != Kind::kJsonSchema) return;
    if (!body.is_object() || !body.contains(constraint.field)) return;
    const ordered* schema = &body[constraint.field];
    if (constraint.field == "structured_outputs" && schema->contains("json")) schema = &(*schema)["json"];
    if (constraint.field == "response_format") {
        if (schema->contains("json_schema")) schema = &(*schema)["json_schema"];
        if (!schema->is_object() || !schema->contains("schema")) return;
        schema = &(*schema)["schema"];
    }
    ordered in_order = schema->is_string() ? ordered::parse(schema->get<std::string>(), nullptr, false) : *schema;
    // Only when it is the same schema (the same body read twice); anything else keeps the decoded one.
    if (!in_order.is_discarded() && json::parse(in_order.dump()) == constraint.schema) {
        constraint.schema_in_order = std::move(in_order);
    }
}

std::optional<FieldError> check_output_constraint_field(const std::string& name, const json& value) {
    OutputConstraint constraint;
    bool constrained = false;
    return decode_field(name, value, &constraint, &constrained);
}

std::optional<FieldError> decode_output_constraint(const json& body, std::optional<OutputConstraint>* out) {
    out->reset();
    for (const char* name : kOutputConstraintFields) {
        const json* value = find_field(body, name);
        if (value == nullptr) continue;
        OutputConstraint constraint;
        bool constrained = false;
        if (auto error = decode_field(name, *value, &constraint, &constrained)) return error;
        if (!constrained) continue;
        if (*out) {
            return error_at(name, fmt::format("'{}' and '{}' both constrain the output: send one", (*out)->field, name));
        }
        *out = std::move(constraint);
    }
    return std::nullopt;
}

}  // namespace tern::api
