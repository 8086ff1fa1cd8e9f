#include "server/structured_output.h"

#include "grammar/gbnf.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar/text_without_gbnf.h"

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

Result<std::shared_ptr<const grammar::CompiledGrammar>> compile_answer(grammar::GrammarCache& cache,
                                                                      const std::string& gbnf,
                                                                      const std::optional<ThinkingFirst>& thinking) {
    if (!thinking || thinking->start == tools::ReasoningStart::kClosed) return cache.get(gbnf);
    // Up to four whitespace bytes between the thinking and the answer, as models write them ("</think>\n\n").
    std::string text = "tern-thinking-gap ::= [ \\t\\r\\n]{0,4}\n";
    const std::string block = "tern-thinking " + grammar::gbnf_literal(thinking->format.end) + " tern-thinking-gap";
    if (thinking->start == tools::ReasoningStart::kOpened) {
        text += "tern-thinking-root ::= " + block + " root\n";
    } else {
        text += "tern-thinking-root ::= " + grammar::gbnf_literal(thinking->format.start) + " " + block +
                " root | root\n";
    }
    TERN_ASSIGN_OR_RETURN(std::string free_text, grammar::text_without_gbnf(thinking->format.end, "tern-thinking"));
    return cache.get(text + free_text + gbnf, "tern-thinking-root");
}

std::variant<std::shared_ptr<const grammar::CompiledGrammar>, RequestError> compile_constraint(
    grammar::GrammarCache& cache, const api::OutputConstraint& constraint,
    const std::optional<ThinkingFirst>& thinking) {
    Result<std::string> text = constraint_gbnf(constraint);
    if (!text.is_ok()) return RequestError{"'" + constraint.field + "': " + text.status().message(), constraint.field};
    auto compiled = compile_answer(cache, text.value(), thinking);
    if (!compiled.is_ok()) {
        return RequestError{"'" + constraint.field + "': " + compiled.status().message(), constraint.field};
    }
    return compiled.value();
}

}  // namespace tern::server
