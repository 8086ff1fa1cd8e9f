// Jinja2's built-in filters and tests, the globals Hugging Face adds (raise_exception, strftime_now) next to
// Jinja's own (range, namespace, dict), Python's str / dict / list methods, and Jinja's attribute and item
// lookup rules. Errors come back without a position; the evaluator adds the place of the call.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "chat/runtime.h"
#include "chat/value.h"

namespace tern::chat::jinja {

using FilterFn = Result<Value> (*)(const Value& input, const CallArgs& args, Budget& budget);
using TestFn = Result<bool> (*)(const Value& input, const CallArgs& args);

// Null when there is no such filter or test (the parser rejects such names, as Jinja2 does at compile time).
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);
// Runs `test`, first charging the budget for walking its input and arguments whole (tests compare and print them).
Result<bool> run_test(TestFn test, const Value& input, const CallArgs& args, Budget& budget);

// range(), namespace(), dict(), raise_exception(), strftime_now(). raise_exception fails with the template's
// own message as the whole error message.
bool is_global_function(std::string_view name);
Result<Value> call_global(std::string_view name, const CallArgs& args, Budget& budget);

// Python methods: str.strip and friends, dict.items/keys/values/get, list.index/count. Mutating methods are
// refused like Jinja's immutable sandbox refuses them.
bool has_method(const Value& receiver, std::string_view name);
Result<Value> call_method(const Value& receiver, std::string_view name, const CallArgs& args, Budget& budget);

// Jinja's environment.getattr and getitem: `x.name` tries the attribute (a method) and then the item, `x[key]` the
// item and then the attribute; a miss is undefined, but any lookup on an undefined value fails.
Result<Value> get_attribute(const Value& object, std::string_view name);
Result<Value> get_item(const Value& object, const Value& key);
// Python slicing of strings (by code point), lists and tuples; a zero step, or slicing anything else, fails.
Result<Value> slice_value(const Value& object, const Value& start, const Value& stop, const Value& step,
                          Budget& budget);
// The error of using an undefined value where a defined one is needed.
Status undefined_error(const Value& value);

// Python's `item in container`: substring, list membership, dict key; false for undefined.
Result<bool> value_in(const Value& item, const Value& container);

// Python's printf-style "format % args" (also the |format filter): %s %r %d %i %f %F %e %E %g %G %x %X %o %c %%
// with flags, width and precision; `args` is a tuple of values, a dict for %(name)s fields, or a single value.
Result<Value> percent_format(const std::string& format, const Value& args, Budget& budget);

// Python's int(text) and float(text): surrounding whitespace, a sign and digit-separating underscores are fine.
std::optional<int64_t> parse_python_int(std::string_view text, int base);
std::optional<double> parse_python_float(std::string_view text);

// Items a for-loop visits: a list's items, a string's characters, a dict's keys; nothing for undefined.
Result<List> iterate(const Value& value);

}  // namespace tern::chat::jinja
