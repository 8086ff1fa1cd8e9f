// Text from an input file or a request, made safe to quote in a one-line error message or log line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tern {

// `text` with control bytes, DEL, backslashes and bytes that are not part of valid UTF-8 written as escapes (\n, \t,
// \\, \xNN), cut after max_bytes of input with "..." appended: a corrupt file's garbage can then neither break a
// log line nor flood it. Valid UTF-8 characters stay as they are.
std::string printable(std::string_view text, size_t max_bytes = 96);

}  // namespace tern
