// Python str semantics over UTF-8 bytes, as Jinja2 templates observe them: whitespace (str.isspace), strip, split,
// title/capitalize, code-point indexing and length, repr() quoting and float repr(). Case mapping is ASCII only;
// other letters keep their case (a documented divergence from Python's full Unicode tables).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tern::chat::jinja {

// Decodes one code point at `pos` and advances it; an invalid byte decodes to itself (as a Latin-1 code point).
char32_t decode_utf8(std::string_view text, size_t& pos);
void append_utf8(std::string& out, char32_t code_point);

// Python's str.isspace() for one code point.
bool py_isspace(char32_t code_point);
// True when every code point of `text` is whitespace (false for an empty string, like str.isspace()).
bool py_all_space(std::string_view text);

// Number of code points (Python len()).
size_t py_length(std::string_view text);
// Byte offsets of every code point, plus text.size() at the end: offsets[i] is where code point i starts.
std::vector<size_t> code_point_offsets(std::string_view text);

// str.strip / lstrip / rstrip; `chars` unset means whitespace.
std::string py_strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right);
// str.split(sep, maxsplit) and str.rsplit; `sep` unset splits on runs of whitespace. A negative maxsplit is unlimited.
std::vector<std::string> py_split(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> py_splitlines(std::string_view text, bool keep_ends);
// str.replace(old, new, count); count < 0 replaces all.
std::string py_replace(std::string_view text, std::string_view old_text, std::string_view new_text, int64_t count);

std::string py_upper(std::string_view text);
std::string py_lower(std::string_view text);
std::string py_capitalize(std::string_view text);  // str.capitalize(): first upper, rest lower
std::string py_title(std::string_view text);       // str.title(): words start after any non-letter
std::string jinja_title(std::string_view text);    // Jinja's |title: words start after whitespace - ( { [ <

// "'text'", for error messages (no escaping).
std::string quoted(std::string_view text);
// repr() of a string: single quotes unless the text has ' and no ", with Python's escapes.
std::string py_repr_string(std::string_view text);
// repr() of a float: shortest round-trip digits, exponent form below 1e-4 or from 1e16, "inf", "nan".
std::string py_float_repr(double value);

}  // namespace tern::chat::jinja
