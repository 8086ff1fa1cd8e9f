// Regular expressions (the PCRE / ECMAScript subset that JSON Schema `pattern`s and structured-output requests use)
// compiled to GBNF rules. Only the language of the pattern matters, so features that change what matches beyond
// the language (backreferences, lookaround, possessive and atomic matching, flags) are refused, never approximated.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace tern::grammar {

struct RegexOptions {
    // The text is the content of a JSON string (between the quotes): characters that JSON must escape are written
    // escaped: a literal `"` becomes the two bytes \" , a literal `\` becomes \\ , control characters U+0000..U+001F
    // in a literal become their JSON escape (\n \r \t \b \f or \u00XX, hex digits in either case); inside character
    // classes and `.` those characters are simply left out (the output is then a subset of what the regex allows,
    // still always valid JSON).
    bool json_string = false;
};

// Converts `pattern` to GBNF rules whose entry rule is `rule_name`; helper rules are named `rule_name-N` so that
// several conversions can live in one grammar text (give them names that are not of the form `other-N`).
// The whole text must match, as if the pattern were ^(?:pattern)$; a leading ^ and a trailing $ are accepted and
// ignored, and an empty pattern matches only the empty string.
//
// Supported: literals (UTF-8), escapes \n \r \t \f \v (U+000B, as in ECMAScript) \a \e \0 \0oo \xHH \x{H...}
// \uHHHH (and \uHHHH\uHHHH surrogate pairs), escaped punctuation, `.` (any code point but \n), classes with ranges,
// negation and POSIX names ([:alpha:]), the ASCII shorthands \d \D \w \W \s \S (PCRE2 without UCP), groups (...)
// (?:...)
// (?<name>...) (?P<name>...) (?'name'...) (?|...), comments (?#...), alternation, and the quantifiers * + ? {n}
// {n,} {n,m} with their lazy forms. A `{` that does not start a quantifier is a literal, as in PCRE2 10.42.
//
// Errors (kInvalidArgument) name the construct and its byte offset, e.g.
// "regex: backreferences are not supported (at offset 7)". Refused: backreferences, lookahead and lookbehind,
// ^ / $ / \A / \z anywhere but the ends, \b \B, inline flags, atomic groups and possessive quantifiers (they can
// reject strings the plain quantifier accepts), recursion, Unicode properties, unbalanced ( ) [ ], a quantifier
// with nothing to repeat or following another quantifier, {n,m} with n > m, counts above 1000, invalid UTF-8,
// and a pattern that matches no string at all (e.g. [^\x00-\x{10FFFF}]).
// Thread-safe (no shared state).
Result<std::string> regex_to_gbnf(std::string_view pattern, std::string_view rule_name,
                                  const RegexOptions& options = {});

}  // namespace tern::grammar
