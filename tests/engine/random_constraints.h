// Random structured-output constraints for the property test (engine_structured_property_test.cc): JSON Schemas of
// varied shape inside what grammar::json_schema_to_gbnf compiles, regular expressions that PCRE2, ECMAScript (ajv's
// `u` flag) and grammar::regex_to_gbnf read alike, and choice lists. Deterministic for a seed. Not a fuzzer: every
// constraint is meant to compile (fuzz/json_schema_fuzz.cc feeds the compiler malformed ones).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace tern::testing {

// Nested objects (required and optional properties, additionalProperties absent, false, true or a schema), arrays
// (items, prefixItems, minItems/maxItems), enum, const, strings (maxLength, pattern, format), integers with ranges,
// numbers with bounds at 0, booleans, null, type lists (nullable), anyOf, oneOf with disjoint alternatives, allOf of
// one, $defs/definitions with $ref, and recursive shapes whose depth a random choice ends (a linked list whose
// `next` may be null, a tree with at most two children, a unary expression, the root itself through "#").
nlohmann::ordered_json random_schema(uint64_t seed);

// Literals (some escaped, some non-ASCII), classes and negated classes, \d \w \s, `.`, groups, alternation and the
// quantifiers ? * + {n} {n,} {n,m} (some lazy); sometimes anchored with ^...$.
std::string random_regex(std::mt19937_64& rng);

// Two to five distinct strings, some sharing prefixes ("a", "ab"), some with characters JSON or GBNF escape.
std::vector<std::string> random_choices(uint64_t seed);

}  // namespace tern::testing
