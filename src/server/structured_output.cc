#include "server/structured_output.h"

#include "grammar/gbnf.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/regex_to_gbnf.h"

namespace tern::server {

Result<std::string> constraint_gbnf(const api::OutputConstraint& constraint) {
    using Kind = api::OutputConstraint::Kind;
    switch (constraint.kind) {
        case Kind::kJsonObject: return grammar::json_object_gbnf("root");
        case Kind::kJsonSchema:
            if (constraint.schema_in_order) return grammar::json_schema_to_gbnf(*constraint.schema_in_order, "root");
            return grammar::json_schema_to_gbnf(constraint.schema, "root");
        case Kind::kRegex: return grammar::regex_to_gbnf(constraint.text, "root");
        case Kind::kGrammar: return constraint.text;
        case Kind::kChoice: {
            std::string text = "root ::=";
            for (size_t i = 0; i < constraint.choices.size(); ++i) {
                text += (i ? " | " : " ") + grammar::gbnf_literal(constraint.choices[i]);
            }
            return text;
        }
    }
    return internal_error("unknown constraint kind");
}

std::variant<std::shared_ptr<const grammar::CompiledGrammar>, RequestError> compile_constraint(
    grammar::GrammarCache& cache, const api::OutputConstraint& constraint) {
    Result<std::string> text = constraint_gbnf(constraint);
    if (!text.is_ok()) return RequestError{"'" + constraint.field + "': " + text.status().message(), constraint.field};
    auto compiled = cache.get(text.value());
    if (!compiled.is_ok()) {
        return RequestError{"'" + constraint.field + "': " + compiled.status().message(), constraint.field};
    }
    return compiled.value();
}

}  // namespace tern::server
