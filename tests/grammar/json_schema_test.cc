// JSON Schema -> GBNF: each schema is compiled, parsed by parse_gbnf and run by the matcher over documents that
// the schema allows (must match) and documents it does not (must not).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/matcher.h"

namespace tern::grammar {
namespace {

using nlohmann::ordered_json;

Grammar compile_or_die(const std::string& schema_text) {
    const Result<std::string> text = json_schema_to_gbnf(ordered_json::parse(schema_text));
    EXPECT_TRUE(text.is_ok()) << text.status().message() << "\nschema: " << schema_text;
    if (!text.is_ok()) return parse_gbnf("root ::= \"\\x00never\"").value();
    Result<Grammar> grammar = parse_gbnf(text.value());
    EXPECT_TRUE(grammar.is_ok()) << grammar.status().message() << "\n" << text.value();
    return grammar.is_ok() ? std::move(grammar).value() : parse_gbnf("root ::= \"\\x00never\"").value();
}

void expect_language(const std::string& schema_text, const std::vector<std::string>& accepted,
                     const std::vector<std::string>& rejected) {
    const Grammar grammar = compile_or_die(schema_text);
    for (const std::string& document : accepted) {
        EXPECT_TRUE(matches(grammar, document)) << "should accept " << document << "\nschema: " << schema_text;
    }
    for (const std::string& document : rejected) {
        EXPECT_FALSE(matches(grammar, document)) << "should reject " << document << "\nschema: " << schema_text;
    }
}

// The error message for `schema_text`, or "" when it compiled.
std::string error_of(const std::string& schema_text) {
    const Result<std::string> text = json_schema_to_gbnf(ordered_json::parse(schema_text));
    return text.is_ok() ? "" : text.status().message();
}

TEST(JsonSchema, Primitives) {
    expect_language(R"({"type": "boolean"})", {"true", "false"}, {"1", "\"true\"", "True", "true ", " true"});
    expect_language(R"({"type": "null"})", {"null"}, {"nul", "\"null\"", "0"});
    expect_language(R"({"type": "integer"})", {"0", "-7", "42", "1234567890123456", "-0"},
                    {"1.0", "01", "+1", "1e3", "12345678901234567", "\"1\"", ""});
    expect_language(R"({"type": "number"})",
                    {"0", "-0.5", "3.25", "1e10", "1.5E-3", "2e+99", "1234567890123456.1234567890123456"},
                    {"01", "1.", ".5", "+1", "1e", "1e100", "1e999", "1.12345678901234567", "NaN", "0x10", "- 1"});
}

TEST(JsonSchema, StringEscapes) {
    expect_language(R"({"type": "string"})",
                    {R"("")", R"("abc")", R"("a\"b\\c\/d")", R"("\b\f\n\r\t")", R"("\u00e9\u00E9")",
                     R"("\ud83d\ude00")", "\"\xC3\xA9\xF0\x9F\x98\x80\"", "\"\x7F\""},
                    {R"("a)", R"("\x41")", R"("\a")", "\"a\nb\"", "\"\t\"", R"("\ud800")", R"("\ude00\ud83d")",
                     R"("\u12")", "\"\xC3\"", "\"\xED\xA0\x80\"", R"("a"")", "abc"});
}

TEST(JsonSchema, StringLengthCountsCharactersAndEscapes) {
    expect_language(
        R"({"type": "string", "minLength": 2, "maxLength": 3})",
        {R"("ab")", R"("abc")", R"("a\nc")", R"("\u00e9\u00e9")", "\"\xC3\xA9\xC3\xA9\"", R"("\ud83d\ude00x")"},
        {R"("a")", R"("")", R"("abcd")", R"("\n\n\n\n")", R"("\ud83d\ude00")"});
    expect_language(R"({"type": "string", "maxLength": 0})", {R"("")"}, {R"("a")"});
    expect_language(R"({"type": "string", "minLength": 1})", {R"("a")", R"("aaaaaaaaaaaaaaaaaaaaaaaaaa")"}, {R"("")"});
}

TEST(JsonSchema, Patterns) {
    expect_language(R"({"type": "string", "pattern": "^[a-z]+@[a-z]+\\.com$"})", {R"("ab@cd.com")"},
                    {R"("ab@cd.org")", R"("@cd.com")", R"("ab@cd.comx")", R"(ab@cd.com)"});
    // The pattern's text is matched as the string's content, so a quote in it is written escaped.
    expect_language(R"({"type": "string", "pattern": "^a\"b$"})", {R"("a\"b")"}, {R"("a"b")", R"("ab")"});
    expect_language(R"({"type": "string", "pattern": "^\\d{3}-\\d{4}$"})", {R"("555-1234")"},
                    {R"("55-1234")", R"("5555-1234")"});
}

TEST(JsonSchema, Formats) {
    expect_language(R"({"type": "string", "format": "date"})",
                    {R"("2024-02-29")", R"("1999-12-31")", R"("2023-04-30")", R"("2023-07-31")", R"("2023-11-30")",
                     R"("2000-02-29")", R"("1600-02-29")", R"("0004-02-29")", R"("2023-02-28")"},
                    {R"("2024-13-01")", R"("2024-00-10")", R"("2024-01-32")", R"("2024-04-31")", R"("2024-02-30")",
                     R"("24-01-01")", R"("2024-1-01")", R"("2023-02-29")", R"("1900-02-29")", R"("2100-02-29")"});
    // A leap second only at 23:59:60 UTC (ajv-formats refuses 12:30:60Z, found by engine_structured_property_test).
    expect_language(R"({"type": "string", "format": "time"})",
                    {R"("23:59:60Z")", R"("23:59:60.5+00:00")", R"("00:00:00.123+05:30")", R"("12:30:00-08:00")"},
                    {R"("24:00:00Z")", R"("12:60:00Z")", R"("12:30:00")", R"("12:30Z")", R"("12:30:60Z")",
                     R"("23:59:60+01:00")"});
    expect_language(R"({"type": "string", "format": "date-time"})", {R"("2024-05-06T07:08:09.5Z")"},
                    {R"("2024-05-06 07:08:09Z")", R"("2024-05-06")"});
    expect_language(R"({"type": "string", "format": "uuid"})", {R"("123e4567-e89b-12d3-A456-426614174000")"},
                    {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"});
    // Formats without a rule here are annotations: any string.
    expect_language(R"({"type": "string", "format": "email"})", {R"("not an email")"}, {"1"});
}

// February 29 exactly in the Gregorian leap years, checked for every four-digit year.
TEST(JsonSchema, DateFebruaryTwentyNinthOnlyInLeapYears) {
    const Grammar grammar = compile_or_die(R"({"type": "string", "format": "date"})");
    for (int year = 0; year <= 9999; ++year) {
        const bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        char document[16];
        std::snprintf(document, sizeof(document), "\"%04d-02-29\"", year);
        EXPECT_EQ(matches(grammar, document), leap) << document;
    }
}

// Every required/optional pattern of four properties, every subset of them present: accepted exactly when all
// required ones are present; commas are right in every case.
TEST(JsonSchema, OptionalPropertyCommasInEveryCombination) {
    const std::vector<std::string> keys = {"a", "b", "c", "d"};
    for (int required_mask = 0; required_mask < 16; ++required_mask) {
        ordered_json schema = {
            {"type", "object"}, {"properties", ordered_json::object()}, {"required", ordered_json::array()}};
        for (size_t key_idx = 0; key_idx < keys.size(); ++key_idx) {
            schema["properties"][keys[key_idx]] = {{"type", "integer"}};
            if (required_mask & (1 << key_idx)) schema["required"].push_back(keys[key_idx]);
        }
        const Grammar grammar = compile_or_die(schema.dump());
        for (int present_mask = 0; present_mask < 16; ++present_mask) {
            std::string document = "{";
            for (size_t key_idx = 0; key_idx < keys.size(); ++key_idx) {
                if (!(present_mask & (1 << key_idx))) continue;
                document +=
                    (document.size() > 1 ? ", " : "") + ("\"" + keys[key_idx] + "\": " + std::to_string(key_idx));
            }
            document += "}";
            const bool allowed = (present_mask & required_mask) == required_mask;
            EXPECT_EQ(matches(grammar, document), allowed) << document << "\nschema: " << schema.dump();
            if (present_mask == 0) continue;
            const std::string trailing_comma = document.substr(0, document.size() - 1) + ",}";
            const std::string leading_comma = "{," + document.substr(1);
            EXPECT_FALSE(matches(grammar, trailing_comma)) << trailing_comma;
            EXPECT_FALSE(matches(grammar, leading_comma)) << leading_comma;
        }
    }
}

TEST(JsonSchema, ObjectsKeepSchemaOrderAndRejectExtras) {
    const std::string schema = R"({"type": "object", "properties": {"name": {"type": "string"},
        "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name", "age"]})";
    expect_language(schema,
                    {R"({"name":"x","age":3})", R"({ "name" : "x" ,"age": 3, "tags": ["a", "b"] })",
                     "{\n  \"name\": \"x\",\n  \"age\": 3\n}", R"({"name":"x","age":3,"tags":[]})"},
                    {R"({"age":3,"name":"x"})", R"({"name":"x"})", R"({"name":"x","age":"3"})",
                     R"({"name":"x","age":3,"other":1})", R"({"name":"x","age":3,"tags":[1]})",
                     R"({"name":"x","age":3,"name":"y"})", R"({"name":"x","age":3} )", R"( {"name":"x","age":3})"});
    // Whitespace is bounded: a newline and at most 20 spaces or tabs.
    expect_language(schema, {"{\n" + std::string(20, ' ') + "\"name\":\"x\",\"age\":1}"},
                    {"{\n" + std::string(21, ' ') + "\"name\":\"x\",\"age\":1}", "{  \"name\":\"x\",\"age\":1}"});
}

TEST(JsonSchema, NlohmannJsonKeysComeAlphabetically) {
    const nlohmann::json schema = nlohmann::json::parse(
        R"({"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}},
            "required": ["a", "b"]})");
    const Result<std::string> text = json_schema_to_gbnf(schema);
    ASSERT_TRUE(text.is_ok()) << text.status().message();
    const Grammar grammar = parse_gbnf(text.value()).value();
    EXPECT_TRUE(matches(grammar, R"({"a":1,"b":2})"));
    EXPECT_FALSE(matches(grammar, R"({"b":2,"a":1})"));
}

TEST(JsonSchema, AdditionalProperties) {
    const std::string typed = R"({"type": "object", "properties": {"id": {"type": "integer"}},
        "required": ["id"], "additionalProperties": {"type": "string"}})";
    expect_language(typed,
                    {R"({"id":1})", R"({"id":1,"x":"a","yy":"b"})", R"({"id":1,"i":"a"})", R"({"id":1,"idx":"a"})",
                     R"({"id":1,"":"a"})"},
                    {R"({"id":1,"x":2})", R"({"id":1,"id":"a"})", R"({"x":"a","id":1})", R"({"id":1,"x":"a",})"});
    // Without named properties, any key; optional named ones may be skipped before the extras.
    expect_language(R"({"type": "object", "additionalProperties": true})", {R"({})", R"({"a":[1,{"b":null}]})"},
                    {R"({"a"})", "[]"});
    expect_language(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": true})",
                    {R"({})", R"({"a":1})", R"({"z":1})", R"({"a":1,"z":[]})"}, {R"({"a":"s"})", R"({"z":1,"a":1})"});
    // A required key that only additionalProperties allows is mandatory, with the additional schema.
    expect_language(R"({"type": "object", "required": ["k"], "additionalProperties": {"type": "boolean"}})",
                    {R"({"k":true})", R"({"k":false,"j":true})"}, {R"({})", R"({"k":1})", R"({"j":true})"});
    // Keys with escapes are excluded in their canonical spelling.
    expect_language(R"({"type": "object", "properties": {"a\"b": {"type": "integer"}}, "additionalProperties": true})",
                    {R"({"a\"b":1})", R"({"a\"c":1})", R"({"a":1})"}, {R"({"a\"b":1,"a\"b":2})"});
    // Nor in any other spelling: a parser keeps the last of two equal keys, so {"a":1,"\u0061":true} would give "a"
    // the extra value (ajv refuses it). Only control characters may be written as \u escapes in an extra key.
    expect_language(R"({"type": "object", "properties": {"a": {"type": "integer"}, "/": {"type": "integer"},
                        "\n": {"type": "integer"}, "\u0001": {"type": "integer"}}, "additionalProperties": true})",
                    {R"({"a":1,"b":true})", R"({"\u0002":true})", R"({"\t":true})", R"({"ba":1})"},
                    {R"({"a":1,"\u0061":true})", R"({"\u0061":true})", R"({"\/":true})", R"({"\u000a":true})",
                     R"({"\u000A":true})", R"({"\u0001":true})", R"({"\u00e9x":true})"});
}

TEST(JsonSchema, EmptyObjectSchemas) {
    // No properties named at all: any object (free-form tool arguments).
    expect_language(R"({"type": "object"})", {R"({})", R"({"x": 1, "y": {"z": "w"}})"}, {"[]", "null"});
    // Properties named and additionalProperties absent: exactly those.
    expect_language(R"({"type": "object", "properties": {}})", {R"({})", R"({ })"}, {R"({"x":1})"});
    expect_language(R"({"type": "object", "additionalProperties": false})", {R"({})"}, {R"({"x":1})"});
    expect_language(R"({"type": "object", "properties": {"a": false, "b": {"type": "null"}}})",
                    {R"({})", R"({"b":null})"}, {R"({"a":1})"});
}

TEST(JsonSchema, NestedObjectsAndTypeLists) {
    expect_language(R"({"type": "object", "properties": {"point": {"type": "object", "properties": {
        "x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]},
        "label": {"type": ["string", "null"]}}, "required": ["point", "label"]})",
                    {R"({"point":{"x":1,"y":2.5},"label":null})", R"({"point":{"x":1,"y":2},"label":"p"})"},
                    {R"({"point":{"x":1},"label":null})", R"({"point":{"x":1,"y":2},"label":1})",
                     R"({"point":null,"label":null})"});
}

TEST(JsonSchema, AnyOfOneOfAllOf) {
    expect_language(R"({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]})", {R"("a")", "0", "5"},
                    {"-1", "null", "1.5"});
    expect_language(R"({"oneOf": [{"type": "boolean"}, {"type": "null"}], "description": "flag"})", {"true", "null"},
                    {"0"});
    expect_language(R"({"allOf": [{"type": "integer", "maximum": 3}], "title": "small"})", {"3", "-3"}, {"4"});
}

TEST(JsonSchema, EnumAndConst) {
    expect_language(R"({"enum": ["red", 1, null, true, {"k": [1, 2]}, 2.5, "a\"b"]})",
                    {R"("red")", "1", "null", "true", R"({"k":[1,2]})", "2.5", R"("a\"b")"},
                    {R"("blue")", "2", R"({"k": [1, 2]})", "false", R"(red)"});
    expect_language(R"({"const": "only"})", {R"("only")"}, {R"("other")"});
    // With a type, values of other types are left out.
    expect_language(R"({"type": "string", "enum": ["a", 1]})", {R"("a")"}, {"1"});
    expect_language(R"({"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
        "required": ["kind", "r"]})",
                    {R"({"kind":"circle","r":1})"}, {R"({"kind":"square","r":1})"});
}

TEST(JsonSchema, ArraysWithBounds) {
    const std::string bounded = R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4})";
    expect_language(bounded, {"[1,2]", "[1, 2, 3]", "[ 1 , 2 , 3 , 4 ]"},
                    {"[]", "[1]", "[1,2,3,4,5]", "[1,2,]", "[1,,2]"});
    expect_language(R"({"type": "array"})", {"[]", R"([1,"a",[null]])"}, {"[", "{}"});
    expect_language(R"({"type": "array", "maxItems": 0})", {"[]"}, {"[1]"});
    expect_language(R"({"type": "array", "items": {"type": "string"}, "minItems": 1})", {R"(["a"])", R"(["a","b"])"},
                    {"[]", "[1]"});
    expect_language(R"({"type": "array", "items": {"type": "boolean"}, "maxItems": 1})", {"[]", "[true]"},
                    {"[true,false]"});
}

TEST(JsonSchema, TupleArrays) {
    const std::string tuple = R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
        "items": false, "minItems": 1})";
    expect_language(tuple, {R"(["a"])", R"(["a",1])"}, {"[]", R"(["a",1,2])", "[1]", R"(["a","b"])"});
    expect_language(R"({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "null"},
        "maxItems": 3})",
                    {"[]", R"(["a"])", R"(["a",null,null])"}, {R"(["a",null,null,null])", "[null]", R"(["a","b"])"});
    // Drafts before 2020-12: items as an array, additionalItems for the rest.
    expect_language(R"({"type": "array", "items": [{"type": "integer"}], "additionalItems": false})", {"[]", "[1]"},
                    {"[1,2]"});
    expect_language(R"({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}], "minItems": 3,
        "items": {"type": "string"}})",
                    {R"([1,2,"a"])", R"([1,2,"a","b"])"}, {"[1,2]", "[1,2,3]"});
}

TEST(JsonSchema, RecursiveReferences) {
    const std::string list = R"({"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
        "required": ["value", "next"]}}, "$ref": "#/$defs/node"})";
    expect_language(list,
                    {R"({"value":1,"next":null})", R"({"value":1,"next":{"value":2,"next":{"value":3,"next":null}}})"},
                    {R"({"value":1})", R"({"value":1,"next":{"value":2}})", "null"});
    const std::string tree = R"({"type": "object", "properties": {"name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#"}}}, "required": ["name"]})";
    expect_language(tree, {R"({"name":"a"})", R"({"name":"a","children":[{"name":"b","children":[{"name":"c"}]}]})"},
                    {R"({"name":"a","children":[{}]})"});
    expect_language(
        R"({"definitions": {"id": {"type": "integer"}}, "type": "array", "items": {"$ref": "#/definitions/id"}})",
        {"[1,2]"}, {R"(["1"])"});
}

TEST(JsonSchema, IntegerRanges) {
    expect_language(R"({"type": "integer", "minimum": 0})", {"0", "1", "9999999999999999"}, {"-1", "-0", "00"});
    expect_language(R"({"type": "integer", "minimum": -5, "maximum": 5})", {"-5", "-1", "0", "5"},
                    {"-6", "6", "-0", "-10", "10", "55"});
    expect_language(R"({"type": "integer", "exclusiveMinimum": -10, "exclusiveMaximum": -3})", {"-9", "-4"},
                    {"-10", "-3", "0", "-1", "-99"});
    expect_language(R"({"type": "integer", "minimum": 17, "maximum": 1234})",
                    {"17", "19", "99", "100", "999", "1000", "1234"}, {"16", "1235", "1300", "2000", "9", "0"});
    expect_language(R"({"type": "integer", "maximum": -100})", {"-100", "-101", "-9999999999999999"},
                    {"-99", "0", "100"});
    // Fractional bounds round inward; draft 4 boolean exclusive bounds.
    expect_language(R"({"type": "integer", "minimum": 1.5, "maximum": 3.5})", {"2", "3"}, {"1", "4"});
    expect_language(
        R"({"type": "integer", "minimum": 1, "exclusiveMinimum": true, "maximum": 3, "exclusiveMaximum": true})", {"2"},
        {"1", "3"});
    expect_language(R"({"type": "integer", "minimum": 1000000000000000000})",
                    {"1000000000000000000", "9999999999999999999"}, {"999999999999999999", "10000000000000000000"});
}

TEST(JsonSchema, NumberSignBounds) {
    expect_language(R"({"type": "number", "minimum": 0})", {"0", "1.5", "0.5", "3e-2"}, {"-1", "-0.5", "-0"});
    expect_language(R"({"type": "number", "exclusiveMinimum": 0})", {"0.001", "7", "1e5", "0.5e1"}, {"0", "-1", "0.0"});
    expect_language(R"({"type": "number", "maximum": 0})", {"0", "-2.5"}, {"1", "0.5"});
    expect_language(R"({"type": "number", "exclusiveMaximum": 0})", {"-0.5", "-3"}, {"0", "2"});
    expect_language(R"({"type": "number", "minimum": 0, "maximum": 0})", {"0"}, {"1", "-1"});
}

TEST(JsonSchema, AnyValueSchemas) {
    for (const std::string schema : {"true", "{}", R"({"description": "anything", "x-custom": 1})"}) {
        expect_language(schema, {"1", R"("s")", "null", R"({"a":[1,{"b":false}]})", "[]", "-2.5e3"},
                        {"", "{", "nul", "[1,]"});
    }
}

TEST(JsonSchema, AnnotationsAndUnknownKeywordsAreIgnored) {
    expect_language(R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "title": "t",
        "description": "d", "$comment": "c", "default": 1, "examples": [1], "deprecated": false, "readOnly": true,
        "writeOnly": false, "strict": true, "name": "n", "x-vendor": {"not": 1}, "type": "integer"})",
                    {"1"}, {"\"1\""});
}

TEST(JsonSchema, RuleNamesArePrefixed) {
    const Result<std::string> weather = json_schema_to_gbnf(
        ordered_json::parse(R"({"type": "object", "properties": {"city": {"type": "string", "pattern": "^[A-Z][a-z]+$"},
            "ws": {"type": "integer", "minimum": 1}}, "required": ["city", "ws"]})"),
        "tool-weather");
    const Result<std::string> time = json_schema_to_gbnf(
        ordered_json::parse(
            R"({"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]})"),
        "tool-time");
    ASSERT_TRUE(weather.is_ok()) << weather.status().message();
    ASSERT_TRUE(time.is_ok()) << time.status().message();
    for (const std::string& text : {weather.value(), time.value()}) {
        size_t line_start = 0;
        while (line_start < text.size()) {
            const std::string line = text.substr(line_start, text.find('\n', line_start) - line_start);
            EXPECT_EQ(line.rfind("tool-", 0), 0u) << line;
            line_start += line.size() + 1;
        }
    }
    const std::string combined = "root ::= tool-weather | tool-time\n" + weather.value() + time.value();
    const Result<Grammar> grammar = parse_gbnf(combined);
    ASSERT_TRUE(grammar.is_ok()) << grammar.status().message() << "\n" << combined;
    EXPECT_TRUE(matches(grammar.value(), R"({"city":"Paris","ws":3})"));
    EXPECT_TRUE(matches(grammar.value(), R"({"zone":"CET"})"));
    EXPECT_FALSE(matches(grammar.value(), R"({"city":"paris","ws":3})"));
    EXPECT_FALSE(matches(grammar.value(), R"({"city":"Paris","ws":0})"));
    EXPECT_FALSE(json_schema_to_gbnf(ordered_json::parse("{}"), "bad name").is_ok());
}

TEST(JsonSchema, AwkwardPropertyNames) {
    expect_language(R"({"type": "object", "properties": {"a b/c~": {"type": "integer"}, "": {"type": "null"},
        "ws": {"type": "boolean"}, "\u00e9": {"type": "integer"}}, "required": ["a b/c~", "", "ws", "\u00e9"]})",
                    {"{\"a b/c~\":1,\"\":null,\"ws\":true,\"\xC3\xA9\":2}"}, {R"({"a b/c~":1,"":null,"ws":true})"});
}

TEST(JsonObjectGbnf, AnyObject) {
    const Grammar grammar = parse_gbnf(json_object_gbnf()).value();
    for (const std::string document :
         {"{}", R"({"a": 1, "b": [true, null, {"c": "d"}], "e": -1.5e-3})", "{\n\t\"x\": {}\n}"}) {
        EXPECT_TRUE(matches(grammar, document)) << document;
    }
    for (const std::string document : {"[]", "1", R"({"a"})", R"({"a":1,})", R"({'a':1})", "{\"a\":01}"}) {
        EXPECT_FALSE(matches(grammar, document)) << document;
    }
    const Grammar value = parse_gbnf(json_value_gbnf("any"), "any").value();
    EXPECT_TRUE(matches(value, "[1]"));
    EXPECT_TRUE(matches(value, "\"s\""));
    EXPECT_FALSE(matches(value, "[1"));
}

TEST(JsonSchemaErrors, RefusedKeywordsNameKeywordAndPointer) {
    for (const std::string keyword :
         {"not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies", "patternProperties",
          "propertyNames", "unevaluatedProperties", "unevaluatedItems", "contains", "minContains", "maxContains",
          "multipleOf", "minProperties", "maxProperties", "$dynamicRef", "$recursiveRef"}) {
        const std::string schema = R"({"type": "object", "properties": {"a": {")" + keyword + R"(": 1}}})";
        EXPECT_EQ(error_of(schema), "json_schema: keyword '" + keyword + "' is not supported (at /properties/a)");
    }
    EXPECT_NE(error_of(R"({"type": "array", "uniqueItems": true})").find("'uniqueItems'"), std::string::npos);
    EXPECT_EQ(error_of(R"({"type": "array", "uniqueItems": false})"), "");
    EXPECT_EQ(error_of(R"({"not": {}})"), "json_schema: keyword 'not' is not supported (at the root)");
    EXPECT_NE(error_of(R"({"items": {"properties": {"a/b": {"not": 1}}}})").find("(at /items/properties/a~1b)"),
              std::string::npos);
}

TEST(JsonSchemaErrors, UnsatisfiableAndUnsupported) {
    const auto expect_error = [](const std::string& schema, const std::string& part) {
        const std::string message = error_of(schema);
        EXPECT_NE(message.find(part), std::string::npos) << "schema: " << schema << "\nmessage: " << message;
    };
    expect_error(R"({"$ref": "https://example.com/s.json"})", "only local references");
    expect_error(R"({"$ref": "#/$defs/missing"})", "does not resolve");
    expect_error(R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})", "required property 'b'");
    expect_error(R"({"type": "object", "properties": {"a": {}}, "required": ["b"], "additionalProperties": false})",
                 "add it to 'properties'");
    expect_error(R"({"type": "array", "minItems": 3, "maxItems": 2})", "'minItems' 3 is above 'maxItems' 2");
    expect_error(R"({"type": "array", "prefixItems": [{}], "items": false, "minItems": 2})", "more items");
    expect_error(R"({"type": "string", "minLength": 5, "maxLength": 4})", "'minLength' 5 is above 'maxLength' 4");
    expect_error(R"({"type": "integer", "minimum": 5, "maximum": 4})", "leave no value");
    expect_error(R"({"type": "integer", "exclusiveMinimum": 4, "exclusiveMaximum": 5})", "leave no value");
    expect_error(R"({"type": "integer", "maximum": 1e19})", "10^18");
    expect_error(R"({"type": "number", "minimum": 1})", "number bounds other than 0 are not supported");
    expect_error(R"({"type": "number", "maximum": -0.5})", "number bounds other than 0 are not supported");
    expect_error(R"({"type": "number", "exclusiveMinimum": 0, "maximum": 0})", "leave no value");
    expect_error(R"({"allOf": [{"type": "integer"}, {"minimum": 1}]})", "'allOf' with 2 subschemas");
    expect_error(R"({"type": "object", "anyOf": [{}, {}]})", "keyword 'type' next to 'anyOf'");
    expect_error(R"({"$ref": "#", "anyOf": [{}]})", "together with");
    expect_error(R"({"type": "strin"})", "'type' must be one of");
    expect_error(R"({"enum": []})", "non-empty array");
    expect_error(R"({"type": "integer", "enum": ["a"]})", "no 'enum'/'const' value");
    expect_error(R"({"const": 1, "enum": [2]})", "not one of the 'enum' values");
    expect_error(R"({"type": "string", "pattern": "(a"})", "'pattern' regex:");
    expect_error(R"({"type": "string", "pattern": "a", "maxLength": 3})", "write the length into the pattern");
    expect_error(R"({"type": "string", "format": "date", "minLength": 3})", "format 'date' together with");
    expect_error(R"({"type": "string", "maxLength": 10001})", "above 10000");
    expect_error(R"({"type": "array", "minItems": -1})", "non-negative integer");
    expect_error(R"({"type": "object", "properties": {"a": false}, "required": ["a"]})", "schema false");
    expect_error("false", "allows no value");
    expect_error("3", "must be an object or a boolean");
}

TEST(JsonSchemaErrors, DeepNestingIsRefused) {
    ordered_json schema = {{"type", "integer"}};
    for (int depth = 0; depth < 200; ++depth) schema = {{"type", "array"}, {"items", schema}};
    EXPECT_NE(error_of(schema.dump()).find("nested deeper"), std::string::npos);
}

}  // namespace
}  // namespace tern::grammar
