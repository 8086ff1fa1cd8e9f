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

namespace tern::server {

// The GBNF text of a constraint (what the cache is keyed by).
Result<std::string> constraint_gbnf(const api::OutputConstraint& constraint);

std::variant<std::shared_ptr<const grammar::CompiledGrammar>, RequestError> compile_constraint(
    grammar::GrammarCache& cache, const api::OutputConstraint& constraint);

}  // namespace tern::server
