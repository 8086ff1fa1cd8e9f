// The structured-output fields as clients spell them, decoded to one constraint; their shapes checked; the schema's
// key order recovered from the body's text.
#include <gtest/gtest.h>

#include "api/output_constraint.h"
#include "api/request_fields.h"

namespace tern::api {
namespace {

using nlohmann::json;
using Kind = OutputConstraint::Kind;

std::optional<OutputConstraint> decoded(const json& fields) {
    json body = fields;
    body["prompt"] = "x";
    if (auto error = check_request_body(Endpoint::kCompletions, body)) {
        ADD_FAILURE() << error->message;
        return std::nullopt;
    }
    std::optional<OutputConstraint> constraint;
    EXPECT_FALSE(decode_output_constraint(body, &constraint).has_value());
    return constraint;
}

FieldError refused(const json& fields) {
    json body = fields;
    body["prompt"] = "x";
    const std::optional<FieldError> error = check_request_body(Endpoint::kCompletions, body);
    EXPECT_TRUE(error.has_value()) << body.dump();
    return error.value_or(FieldError{});
}

TEST(OutputConstraint, EachSpellingDecodes) {
    const json schema = {{"type", "integer"}};
    auto c = decoded({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", schema}}}}}});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->kind, Kind::kJsonSchema);
    EXPECT_EQ(c->schema, schema);
    EXPECT_EQ(c->field, "response_format");
    EXPECT_EQ(decoded({{"response_format", {{"type", "json_object"}}}})->kind, Kind::kJsonObject);
    EXPECT_EQ(decoded({{"response_format", {{"type", "json_object"}, {"schema", schema}}}})->schema, schema);
    EXPECT_FALSE(decoded({{"response_format", {{"type", "text"}}}}).has_value());
    EXPECT_EQ(decoded({{"guided_json", schema.dump()}})->schema, schema);
    EXPECT_EQ(decoded({{"guided_regex", "a+"}})->text, "a+");
    EXPECT_EQ(decoded({{"guided_choice", {"x", "y"}}})->choices, (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(decoded({{"guided_grammar", "root ::= \"a\""}})->kind, Kind::kGrammar);
    EXPECT_EQ(decoded({{"structured_outputs", {{"regex", "b"}}}})->kind, Kind::kRegex);
    EXPECT_EQ(decoded({{"structured_outputs", {{"json_object", true}}}})->kind, Kind::kJsonObject);
    EXPECT_EQ(decoded({{"json_schema", schema}})->field, "json_schema");
    EXPECT_EQ(decoded({{"grammar", "root ::= \"a\""}})->text, "root ::= \"a\"");
    // A text response_format beside a real constraint is no conflict.
    EXPECT_EQ(decoded({{"response_format", {{"type", "text"}}}, {"guided_regex", "a"}})->kind, Kind::kRegex);
}

TEST(OutputConstraint, BadShapesNameTheField) {
    EXPECT_EQ(refused({{"response_format", "json"}}).param, "response_format");
    EXPECT_EQ(refused({{"response_format", {{"type", "json_schema"}}}}).param, "response_format");
    EXPECT_EQ(refused({{"guided_json", 5}}).param, "guided_json");
    EXPECT_EQ(refused({{"guided_json", "[1, 2"}}).param, "guided_json");
    EXPECT_EQ(refused({{"guided_choice", {"a", 1}}}).param, "guided_choice");
    EXPECT_EQ(refused({{"guided_regex", json::array()}}).param, "guided_regex");
    EXPECT_EQ(refused({{"structured_outputs", {{"regex", "a"}, {"choice", {"b"}}}}}).param, "structured_outputs");
    EXPECT_EQ(refused({{"structured_outputs", {{"xml", "a"}}}}).param, "structured_outputs");
    const FieldError both = refused({{"guided_regex", "a"}, {"grammar", "root ::= \"a\""}});
    EXPECT_NE(both.message.find("both constrain"), std::string::npos) << both.message;
}

TEST(OutputConstraint, TheSchemaKeepsTheBodysKeyOrder) {
    const std::string text = R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "n",
        "schema": {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "string"}}}}}})";
    const json body = json::parse(text);
    std::optional<OutputConstraint> constraint;
    ASSERT_FALSE(decode_output_constraint(body, &constraint).has_value());
    keep_schema_order(nlohmann::ordered_json::parse(text), *constraint);
    ASSERT_TRUE(constraint->schema_in_order.has_value());
    EXPECT_EQ((*constraint->schema_in_order)["properties"].begin().key(), "zeta");
    EXPECT_EQ(constraint->schema["properties"].begin().key(), "alpha");  // nlohmann::json sorts
}

}  // namespace
}  // namespace tern::api
