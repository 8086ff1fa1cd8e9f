// Free text up to a marker: any bytes that do not contain the marker, as a grammar. What lets a reasoning model
// think before a constrained answer: `"<think>" text-without-"</think>" "</think>" answer`, so that the grammar
// (and the token masks, and the budget steering) covers the whole output and the answer is constrained from where
// the thinking ends, however the model's vocabulary spells the markers.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace tern::grammar {

// GBNF rules defining `rule` (and helpers named `rule`-...) as every byte string in which `marker` does not occur.
// The marker's first byte must occur in it only once (true of </think>, [/THINK], <|end_of_thought|>): then
// an occurrence cannot overlap a partial one, and the rules stay left-recursive, which the matcher runs in constant
// work per byte. Fails (kInvalidArgument) otherwise, or for an empty marker.
Result<std::string> text_without_gbnf(std::string_view marker, const std::string& rule);

}  // namespace tern::grammar
