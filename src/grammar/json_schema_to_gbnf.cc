// Dispatch over a schema's keywords (refused ones, enum/const, types), references and composition, and the public
// entry points. Objects, arrays and strings, numbers, and the shared helper rules live in json_schema_objects.cc,
// json_schema_arrays.cc, json_schema_numbers.cc and json_schema_rules.cc.
#include "grammar/json_schema_to_gbnf.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

#include "grammar/json_schema_compiler.h"

namespace tern::grammar {
namespace json_schema {
namespace {

// A schema nested deeper than this is an attack or a mistake; recursion through $ref does not count (references
// compile once).
constexpr int kMaxDepth = 128;

// Keywords that constrain values in ways a grammar here cannot express: refusing them keeps the grammar from
// silently allowing what the schema forbids.
// clang-format off
constexpr std::array<std::string_view, 19> kRefusedKeywords = {
    "not", "if", "then", "else", "dependentRequired",
    "dependentSchemas", "dependencies", "patternProperties", "propertyNames", "unevaluatedProperties",
    "unevaluatedItems", "contains", "minContains", "maxContains", "multipleOf",
    "minProperties", "maxProperties", "$dynamicRef", "$recursiveRef"};
// clang-format on

// Keywords this compiler gives meaning to; next to $ref/anyOf/oneOf/allOf they would need an intersection.
// clang-format off
constexpr std::array<std::string_view, 23> kConstrainingKeywords = {
    "type", "enum", "const", "properties", "required", "additionalProperties",
    "items", "prefixItems", "additionalItems", "minItems", "maxItems", "minLength",
    "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "$ref", "anyOf", "oneOf", "allOf"};
// clang-format on

constexpr std::array<std::string_view, 4> kCompositionKeywords = {"$ref", "anyOf", "oneOf", "allOf"};

// The keywords that imply a type when `type` is absent.
struct TypeHint {
    std::string_view type;
    std::array<std::string_view, 5> keywords;
};
constexpr std::array<TypeHint, 4> kTypeHints = {{
    {"object", {"properties", "required", "additionalProperties", "", ""}},
    {"array", {"items", "prefixItems", "additionalItems", "minItems", "maxItems"}},
    {"string", {"minLength", "maxLength", "pattern", "format", ""}},
    {"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", ""}},
}};

constexpr std::array<std::string_view, 7> kTypeNames = {"string", "number", "integer", "boolean",
                                                        "null",   "object", "array"};

Status check_refused_keywords(const Json& schema, const std::string& pointer) {
    for (std::string_view keyword : kRefusedKeywords) {
        if (schema.contains(keyword)) {
            return schema_error(std::string("keyword '") + std::string(keyword) + "' is not supported", pointer);
        }
    }
    const auto unique = schema.find("uniqueItems");
    if (unique != schema.end() && *unique != Json(false)) {
        return schema_error("keyword 'uniqueItems' is not supported (a grammar cannot compare items)", pointer);
    }
    return Status::ok();
}

// The one composition keyword of `schema`; an error when it has several, or constraining keywords beside it.
Result<std::string_view> composition_keyword(const Json& schema, const std::string& pointer) {
    std::vector<std::string_view> composition;
    std::copy_if(kCompositionKeywords.begin(), kCompositionKeywords.end(), std::back_inserter(composition),
                 [&](std::string_view keyword) { return schema.contains(keyword); });
    if (composition.size() > 1) {
        return schema_error(std::string("'") + std::string(composition[0]) + "' together with '" +
                                std::string(composition[1]) + "' is not supported: nest one inside the other",
                            pointer);
    }
    for (std::string_view sibling : kConstrainingKeywords) {
        if (sibling == composition[0] || !schema.contains(sibling)) continue;
        return schema_error(std::string("keyword '") + std::string(sibling) + "' next to '" +
                                std::string(composition[0]) +
                                "' is not supported (that needs an intersection of schemas): move it into the "
                                "subschemas",
                            pointer);
    }
    return composition[0];
}

bool value_has_type(const Json& value, std::string_view type) {
    if (type == "string") return value.is_string();
    if (type == "number") return value.is_number();
    if (type == "integer") {
        return value.is_number_integer() || (value.is_number_float() && std::isfinite(value.get<double>()) &&
                                             std::floor(value.get<double>()) == value.get<double>());
    }
    if (type == "boolean") return value.is_boolean();
    if (type == "null") return value.is_null();
    if (type == "object") return value.is_object();
    return value.is_array();
}

// The types `schema` allows: its `type`, or those its keywords imply; empty means any value.
Result<std::vector<std::string>> schema_types(const Json& schema, const std::string& pointer) {
    std::vector<std::string> types;
    const auto type = schema.find("type");
    if (type == schema.end()) {
        for (const TypeHint& hint : kTypeHints) {
            const bool used = std::any_of(hint.keywords.begin(), hint.keywords.end(), [&](std::string_view keyword) {
                return !keyword.empty() && schema.contains(keyword);
            });
            if (used) types.emplace_back(hint.type);
        }
        return types;
    }
    const Json names = type->is_array() ? *type : Json::array({*type});
    for (const Json& name : names) {
        if (!name.is_string() ||
            std::find(kTypeNames.begin(), kTypeNames.end(), name.get<std::string>()) == kTypeNames.end()) {
            return schema_error(
                "'type' must be one of string, number, integer, boolean, null, object, array (or a "
                "list of them), not " +
                    name.dump(-1, ' ', false, Json::error_handler_t::replace),
                pointer);
        }
        if (std::find(types.begin(), types.end(), name.get<std::string>()) == types.end()) {
            types.push_back(name.get<std::string>());
        }
    }
    if (types.empty()) return schema_error("'type' is an empty list: no value is allowed", pointer);
    return types;
}

// The values an enum or const allows, filtered by the schema's type when it has one.
Result<std::vector<Json>> enum_values(const Json& schema, const std::string& pointer) {
    std::vector<Json> values;
    const auto constant = schema.find("const");
    const auto listed = schema.find("enum");
    if (listed != schema.end() && (!listed->is_array() || listed->empty())) {
        return schema_error("'enum' must be a non-empty array", pointer);
    }
    if (constant != schema.end()) {
        if (listed != schema.end() && std::find(listed->begin(), listed->end(), *constant) == listed->end()) {
            return schema_error("'const' is not one of the 'enum' values: no value is allowed", pointer);
        }
        values.push_back(*constant);
    } else {
        values.assign(listed->begin(), listed->end());
    }
    if (!schema.contains("type")) return values;
    TERN_ASSIGN_OR_RETURN(const std::vector<std::string> types, schema_types(schema, pointer));
    std::erase_if(values, [&](const Json& value) {
        return std::none_of(types.begin(), types.end(),
                            [&](const std::string& type) { return value_has_type(value, type); });
    });
    if (values.empty()) return schema_error("no 'enum'/'const' value has the schema's 'type'", pointer);
    return values;
}

Result<std::string> compile_enum(const Json& schema, const std::string& pointer) {
    TERN_ASSIGN_OR_RETURN(const std::vector<Json> values, enum_values(schema, pointer));
    std::vector<std::string> literals;
    for (const Json& value : values) {
        TERN_ASSIGN_OR_RETURN(const std::string text, dump_compact(value, pointer));
        const std::string literal = gbnf_literal(text);
        if (std::find(literals.begin(), literals.end(), literal) == literals.end()) literals.push_back(literal);
    }
    return any_of_texts(literals);
}

}  // namespace

SchemaCompiler::SchemaCompiler(const Json& root, std::string rule_name) : root_(root), prefix_(std::move(rule_name)) {
    used_names_.insert(prefix_);
    // Helper names are taken up front so that a property called "ws" cannot claim `<prefix>-ws` first.
    for (int kind = 0; kind <= static_cast<int>(Helper::kUuid); ++kind) {
        used_names_.insert(prefix_ + "-" + std::string(helper_suffix(static_cast<Helper>(kind))));
    }
}

Result<std::string> SchemaCompiler::compile_root() {
    TERN_ASSIGN_OR_RETURN(const std::string body, compile(root_, "", prefix_));
    return grammar_text(body);
}

std::string SchemaCompiler::any_object_grammar() { return grammar_text(helper(Helper::kObject)); }

std::string SchemaCompiler::any_value_grammar() { return grammar_text(helper(Helper::kValue)); }

Result<std::string> SchemaCompiler::compile(const Json& schema, const std::string& pointer, const std::string& name) {
    if (schema.is_boolean()) {
        if (schema.get<bool>()) return helper(Helper::kValue);
        return schema_error("the schema false allows no value", pointer);
    }
    if (!schema.is_object()) return schema_error("a schema must be an object or a boolean", pointer);
    TERN_RETURN_IF_ERROR(check_refused_keywords(schema, pointer));
    if (depth_ >= kMaxDepth) {
        return schema_error("schemas nested deeper than " + std::to_string(kMaxDepth) + " are not supported", pointer);
    }
    ++depth_;
    Result<std::string> expression = [&]() -> Result<std::string> {
        const bool composed = std::any_of(kCompositionKeywords.begin(), kCompositionKeywords.end(),
                                          [&](std::string_view keyword) { return schema.contains(keyword); });
        if (composed) return compile_composition(schema, pointer, name);
        if (schema.contains("const") || schema.contains("enum")) return compile_enum(schema, pointer);
        return compile_types(schema, pointer, name);
    }();
    --depth_;
    return expression;
}

Result<std::string> SchemaCompiler::compile_to_rule(const Json& schema, const std::string& pointer,
                                                    const std::string& name) {
    const std::string rule = fresh_name(name);
    TERN_ASSIGN_OR_RETURN(std::string expression, compile(schema, pointer, rule));
    if (is_rule_name(expression)) return expression;
    define(rule, std::move(expression));
    return rule;
}

Result<std::string> SchemaCompiler::compile_composition(const Json& schema, const std::string& pointer,
                                                        const std::string& name) {
    TERN_ASSIGN_OR_RETURN(const std::string_view keyword, composition_keyword(schema, pointer));
    if (keyword == "$ref") return compile_reference(schema, pointer);
    const Json& subschemas = schema[std::string(keyword)];
    const std::string list_pointer = child_pointer(pointer, keyword);
    if (!subschemas.is_array() || subschemas.empty()) {
        return schema_error(std::string("'") + std::string(keyword) + "' must be a non-empty array of schemas",
                            pointer);
    }
    if (keyword == "allOf") {
        if (subschemas.size() != 1) {
            return schema_error("'allOf' with " + std::to_string(subschemas.size()) +
                                    " subschemas is not supported: merge them into one schema",
                                pointer);
        }
        return compile(subschemas[0], child_pointer(list_pointer, "0"), name);
    }
    // NOTE: oneOf compiles as anyOf: a grammar cannot enforce that exactly one alternative matches, so a value that
    // matches two alternatives is still accepted.
    std::vector<std::string> alternatives;
    for (size_t alternative_idx = 0; alternative_idx < subschemas.size(); ++alternative_idx) {
        TERN_ASSIGN_OR_RETURN(
            std::string rule,
            compile_to_rule(subschemas[alternative_idx], child_pointer(list_pointer, std::to_string(alternative_idx)),
                            name + "-alt" + std::to_string(alternative_idx)));
        if (std::find(alternatives.begin(), alternatives.end(), rule) == alternatives.end())
            alternatives.push_back(rule);
    }
    return any_of_texts(alternatives);
}

// One rule per referenced schema, named before its body compiles, so recursive schemas refer back to it.
Result<std::string> SchemaCompiler::compile_reference(const Json& schema, const std::string& pointer) {
    const Json& reference = schema["$ref"];
    if (!reference.is_string()) return schema_error("'$ref' must be a string", pointer);
    const std::string target = reference.get<std::string>();
    if (target == "#") return prefix_;
    if (target.rfind("#/", 0) != 0) {
        return schema_error("$ref '" + target +
                                "' is not supported: only local references ('#', '#/$defs/...', "
                                "'#/definitions/...') are",
                            pointer);
    }
    if (const auto known = reference_rules_.find(target); known != reference_rules_.end()) return known->second;
    const Json* resolved = nullptr;
    try {
        resolved = &root_.at(Json::json_pointer(target.substr(1)));
    } catch (const Json::exception&) {
        return schema_error("$ref '" + target + "' does not resolve to a part of this schema", pointer);
    }
    const std::string rule = fresh_name(name_from(prefix_, target.substr(target.rfind('/') + 1)));
    reference_rules_[target] = rule;
    TERN_ASSIGN_OR_RETURN(std::string body, compile(*resolved, target.substr(1), rule));
    define(rule, std::move(body));
    return rule;
}

Result<std::string> SchemaCompiler::compile_types(const Json& schema, const std::string& pointer,
                                                  const std::string& name) {
    TERN_ASSIGN_OR_RETURN(const std::vector<std::string> types, schema_types(schema, pointer));
    if (types.empty()) return helper(Helper::kValue);
    std::vector<std::string> alternatives;
    for (const std::string& type : types) {
        // Several types each get their own helper names (`x-string-...`, `x-array-...`).
        const std::string type_name = types.size() == 1 ? name : name + "-" + type;
        TERN_ASSIGN_OR_RETURN(std::string alternative, compile_type(type, schema, pointer, type_name));
        alternatives.push_back(std::move(alternative));
    }
    return any_of_texts(alternatives);
}

Result<std::string> SchemaCompiler::compile_type(const std::string& type, const Json& schema,
                                                 const std::string& pointer, const std::string& name) {
    if (type == "string") return compile_string(schema, pointer, name);
    if (type == "number") return compile_number(schema, pointer);
    if (type == "integer") return compile_integer(schema, pointer);
    if (type == "boolean") return helper(Helper::kBoolean);
    if (type == "null") return helper(Helper::kNull);
    if (type == "object") return compile_object(schema, pointer, name);
    return compile_array(schema, pointer, name);
}

}  // namespace json_schema

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema, std::string_view rule_name) {
    if (!json_schema::is_rule_name(rule_name)) {
        return invalid_argument(std::string("json_schema: rule name '") + std::string(rule_name) +
                                "' must be letters, digits, '-' and '_'");
    }
    json_schema::SchemaCompiler compiler(schema, std::string(rule_name));
    return compiler.compile_root();
}

Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema, std::string_view rule_name) {
    return json_schema_to_gbnf(nlohmann::ordered_json(schema), rule_name);
}

std::string json_object_gbnf(std::string_view rule_name) {
    const nlohmann::ordered_json schema = nlohmann::ordered_json::object();
    return json_schema::SchemaCompiler(schema, std::string(rule_name)).any_object_grammar();
}

std::string json_value_gbnf(std::string_view rule_name) {
    const nlohmann::ordered_json schema = nlohmann::ordered_json::object();
    return json_schema::SchemaCompiler(schema, std::string(rule_name)).any_value_grammar();
}

}  // namespace tern::grammar
