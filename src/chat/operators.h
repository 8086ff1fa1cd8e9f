// Python's arithmetic and comparison operators over interpreter values, as Jinja2 evaluates them: int / float / bool
// arithmetic with Python's floor division and modulo, str and list concatenation and repetition, printf-style %,
// and comparisons that fail between types Python cannot order. Integer overflow fails instead of growing.
#pragma once

#include <string_view>

#include "base/status.h"
#include "chat/runtime.h"
#include "chat/value.h"

namespace tern::chat::jinja {

// op is one of + - * / // % **.
Result<Value> binary_op(std::string_view op, const Value& left, const Value& right, Budget& budget);
// op is "-" or "+".
Result<Value> unary_op(std::string_view op, const Value& operand);
// op is one of == != < <= > >= in "not in".
Result<bool> compare_op(std::string_view op, const Value& left, const Value& right, Budget& budget);

}  // namespace tern::chat::jinja
