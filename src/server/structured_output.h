// A request's structured-output constraint (api/output_constraint.h) made into a compiled grammar for the model's
// vocabulary, through the server's cache. Refusals are 400s naming the field: an unsupported schema keyword, a bad
// regular expression or grammar, a constraint nothing can satisfy.
#pragma once

#include <memory>
#include <string>
#include <variant>

#include "api/output_constraint.h"
#include "grammar/grammar_cache.h"
#include "server/request_parser.h"
#include "tools/reasoning.h"

namespace tern::server {

// The GBNF text of a constraint (what the cache is keyed by).
Result<std::string> constraint_gbnf(const api::OutputConstraint& constraint);

// Where a reasoning model's output begins: the answer's grammar then comes after its thinking.
struct ThinkingFirst {
    tools::ReasoningFormat format;
    tools::ReasoningStart start = tools::ReasoningStart::kClosed;
};

// The compiled grammar of an answer (GBNF, start rule "root"), preceded by a thinking block of any text when
// `thinking` says the output may (kMay) or must (kOpened) begin with one. The thinking is free text, so it is
// neither shorter nor more constrained than without a grammar; the budget steering closes it in time.
Result<std::shared_ptr<const grammar::CompiledGrammar>> compile_answer(grammar::GrammarCache& cache,
                                                                      const std::string& gbnf,
                                                                      const std::optional<ThinkingFirst>& thinking);

std::variant<std::shared_ptr<const grammar::CompiledGrammar>, RequestError> compile_constraint(
    grammar::GrammarCache& cache, const api::OutputConstraint& constraint,
    const std::optional<ThinkingFirst>& thinking = std::nullopt);

}  // namespace tern::server
