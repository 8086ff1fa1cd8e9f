// Structured output as requested in an OpenAI-style body, in the spellings clients send: OpenAI's
// `response_format` (json_object, json_schema), vLLM's `guided_json` / `guided_regex` / `guided_choice` /
// `guided_grammar` and their newer `structured_outputs` object, llama-server's `json_schema` and `grammar`. Only
// the request's words are decoded here; what the grammar is made of is the grammar module's business.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/request_fields.h"

namespace tern::api {

struct OutputConstraint {
    enum class Kind { kJsonObject, kJsonSchema, kRegex, kChoice, kGrammar };
    Kind kind = Kind::kJsonObject;
    nlohmann::json schema;             // kJsonSchema
    // The schema with its keys in the client's order (nlohmann::json sorts them), when the body's text was at hand:
    // properties come out in the order the schema lists them, as with OpenAI.
    std::optional<nlohmann::ordered_json> schema_in_order;
    std::string text;                  // kRegex: the pattern; kGrammar: GBNF
    std::vector<std::string> choices;  // kChoice
    std::string field;                 // the body field it came from, for errors (OpenAI's `param`)
};

// The body fields that can carry a constraint.
inline constexpr const char* kOutputConstraintFields[] = {"response_format", "guided_json",        "guided_regex",
                                                          "guided_choice",   "guided_grammar",     "structured_outputs",
                                                          "json_schema",     "grammar"};

// Checks one such field's value (its shape, not whether a grammar can be made of it).
std::optional<FieldError> check_output_constraint_field(const std::string& name, const nlohmann::json& value);

// Takes the schema of a kJsonSchema `constraint` from the body read with its key order (`ordered_body`; the same
// body, parsed once for this and keep_tool_order), when it is the same schema.
void keep_schema_order(const nlohmann::ordered_json& ordered_body, OutputConstraint& constraint);

// The constraint of a checked body, nullopt when none (or response_format {"type": "text"}); more than one field
// setting one is an error.
std::optional<FieldError> decode_output_constraint(const nlohmann::json& body, std::optional<OutputConstraint>* out);

}  // namespace tern::api
