// JSON Schema (the subset structured-output requests use) compiled to GBNF rules, for response_format json_schema,
// guided_json and tool-call arguments. It owns the schema semantics; parsing GBNF and matching are gbnf.h and
// matcher.h. Keywords that constrain what it cannot express are refused with an error, never silently dropped.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tern::grammar {

// GBNF rules whose entry rule is `rule_name` and whose helper rules are all named `rule_name-...`, so that a
// tool-call grammar can hold several schemas in one text. The entry rule spells one JSON value with no whitespace
// around it; between tokens inside it, whitespace is bounded (`ws ::= | " " | "\n" [ \t]{0,20}`).
//
// The grammar accepts a subset of what the schema allows, chosen so that generation stays short and parseable:
//   - properties come in the order of `properties` (pass an ordered_json to keep the request's order: nlohmann::json
//     sorts keys), required ones mandatory, optional ones optional; no duplicate keys;
//   - additionalProperties absent or false: no other properties (as OpenAI strict mode and XGrammar do), except
//     for an object schema that names no property at all, which means any object; true or a schema: extra pairs
//     may follow the named ones, with keys other than the named ones in any spelling (an extra key writes \u
//     escapes only for control characters), though two extra pairs may still share a key: a grammar cannot
//     remember the keys it has seen;
//   - numbers and integers have at most 16 integer digits (more when an integer bound needs them), fractions 1..16
//     digits, exponents 1..2 digits (so every number is a finite double); integers are written without fraction
//     or exponent; bounded integers and signed numbers never as "-0";
//   - strings use JSON escapes only where JSON requires them plus \/ and \uXXXX (surrogates only as valid pairs);
//     minLength/maxLength count characters: one unescaped code point or one escape (a surrogate pair is one);
//   - `pattern` must match the whole string (as if anchored), via regex_to_gbnf;
//   - enum and const values are spelled compactly, exactly as nlohmann dumps them; beside them only `type` counts
//     (values of other types are left out), other keywords are not checked against the values;
//   - format date, time, date-time (RFC 3339, upper-case T and Z; a leap second only as 23:59:60 UTC) and
//     uuid are enforced; other formats accept any string.
// Supported: type (one or a list), properties, required, additionalProperties, items, prefixItems (and the older
// array form of items with additionalItems), minItems, maxItems, enum, const, anyOf, oneOf (as anyOf), allOf with
// one subschema, $ref to "#", "#/$defs/...", "#/definitions/..." or another local JSON pointer (recursion works),
// pattern, minLength, maxLength, format, integer minimum/maximum/exclusiveMinimum/exclusiveMaximum (any values up
// to 10^18 in magnitude) and number bounds of 0. Unknown keywords and annotations are ignored.
//
// Errors (kInvalidArgument) name the keyword and the JSON pointer of the schema that holds it, e.g.
// "json_schema: keyword 'not' is not supported (at /properties/a)". Refused: not, if/then/else, dependentRequired,
// dependentSchemas, dependencies, patternProperties, propertyNames, unevaluatedProperties, unevaluatedItems,
// contains, minContains, maxContains, uniqueItems: true, multipleOf, minProperties, maxProperties, $dynamicRef,
// $recursiveRef, remote or unresolvable $ref, allOf with several subschemas, constraining keywords next to
// anyOf/oneOf/allOf/$ref, pattern or format together with a length bound, number bounds other than 0, counts
// (minLength, maxItems, ...) above 10000, schemas nested deeper than 128, a rule_name that is not letters, digits,
// '-' and '_', and unsatisfiable schemas (a required property the object cannot have, min above max, an empty enum).
// Thread-safe (no shared state).
Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema, std::string_view rule_name = "root");
// The same for a schema whose key order is already lost: properties come alphabetically.
Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema, std::string_view rule_name = "root");

// Any JSON object (response_format json_object), with the same bounded whitespace, numbers and strings.
std::string json_object_gbnf(std::string_view rule_name = "root");
// Any JSON value.
std::string json_value_gbnf(std::string_view rule_name = "root");

}  // namespace tern::grammar
