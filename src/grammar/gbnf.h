// GBNF, llama.cpp's grammar text (grammars/README.md there), parsed to a Grammar:
//   root   ::= object                      # a rule; `#` starts a comment
//   object ::= "{" ws ( pair ( "," ws pair )* )? "}"
//   pair   ::= [a-z]+ ":" ws ("true" | "false" | [0-9]{1,3}) | [^\x00-\x1f"\\] . ?
// Literals "..." and classes [...] / [^...] / `.` are over Unicode code points (escapes \n \r \t \\ \" \] \-
// \xHH \uHHHH \UHHHHHHHH) and are spelled as UTF-8 bytes; repetition is * + ? {n} {n,} {n,m} {,m}. A rule ends
// where the next `name ::=` begins, so alternatives may continue on the next line.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "grammar/grammar.h"

namespace tern::grammar {

// Errors name the line and column and what was expected.
Result<Grammar> parse_gbnf(std::string_view text, std::string_view root = "root");

// `text` as a GBNF string literal, quotes included: `"`, `\` and control characters escaped, other UTF-8 as is.
std::string gbnf_literal(std::string_view text);

}  // namespace tern::grammar
