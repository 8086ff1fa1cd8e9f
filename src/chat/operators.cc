#include "chat/operators.h"

#include <cmath>

#include "chat/builtins.h"
#include "chat/py_string.h"

namespace tern::chat::jinja {
namespace {

Status unsupported(std::string_view op, const Value& left, const Value& right) {
    return invalid_argument("unsupported operand type(s) for " + std::string(op) + ": '" + left.type_name() +
                            "' and '" + right.type_name() + "'");
}

Status overflow() { return invalid_argument("integer overflow (the result does not fit in 64 bits)"); }

// Python's float floor division and modulo: the remainder takes the divisor's sign.
std::pair<double, double> float_divmod(double x, double y) {
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0) {
        if ((y < 0) != (mod < 0)) {
            mod += y;
            div -= 1.0;
        }
    } else {
        mod = std::copysign(0.0, y);
    }
    double floordiv = 0;
    if (div != 0) {
        floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
        floordiv = std::copysign(0.0, x / y);
    }
    return {floordiv, mod};
}

Result<Value> repeat(const Value& sequence, int64_t count, Budget& budget) {
    if (count < 0) count = 0;
    // An empty sequence repeats to itself at no cost; the loops below would otherwise spin `count` times with
    // nothing charged to the budget (the fuzzer's `[] * 2168611216` took minutes).
    const bool empty = sequence.is_string() ? sequence.as_string().empty() : sequence.as_list().empty();
    if (empty) count = 0;
    if (sequence.is_string()) {
        const std::string& text = sequence.as_string();
        if (!text.empty() && static_cast<uint64_t>(count) > budget.options().max_output_bytes / text.size()) {
            return budget.charge_string(budget.options().max_output_bytes + 1);
        }
        TERN_RETURN_IF_ERROR(budget.charge_string(text.size() * static_cast<size_t>(count)));
        std::string out;
        out.reserve(text.size() * static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) out += text;
        return Value::string(std::move(out));
    }
    const List& items = sequence.as_list();
    if (!items.empty() && static_cast<uint64_t>(count) > budget.options().max_work / items.size()) {
        return budget.charge(budget.options().max_work + 1);
    }
    TERN_RETURN_IF_ERROR(budget.charge_items(items.size() * static_cast<size_t>(count) + 1));
    List out;
    for (int64_t i = 0; i < count; ++i) out.insert(out.end(), items.begin(), items.end());
    return sequence.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Result<Value> add(const Value& left, const Value& right, Budget& budget) {
    if (left.is_integral() && right.is_integral()) {
        int64_t sum = 0;
        if (__builtin_add_overflow(left.as_int(), right.as_int(), &sum)) return overflow();
        return Value::integer(sum);
    }
    if (left.is_numeric() && right.is_numeric()) return Value::number(left.as_double() + right.as_double());
    if (left.is_string()) {
        if (!right.is_string()) {
            return invalid_argument(std::string("can only concatenate str (not \"") + right.type_name() + "\") to str");
        }
        TERN_RETURN_IF_ERROR(budget.charge_string(left.as_string().size() + right.as_string().size()));
        return Value::string(left.as_string() + right.as_string());
    }
    if (left.is_list() && right.is_list() && left.is_tuple() == right.is_tuple()) {
        TERN_RETURN_IF_ERROR(budget.charge_items(left.as_list().size() + right.as_list().size() + 1));
        List items = left.as_list();
        items.insert(items.end(), right.as_list().begin(), right.as_list().end());
        Value joined = left.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
        if (joined.depth() > kMaxValueDepth) return invalid_argument("value nested too deeply");
        return joined;
    }
    if (left.is_list()) {
        return invalid_argument(std::string("can only concatenate ") + left.type_name() + " (not \"" +
                                right.type_name() + "\") to " + left.type_name());
    }
    return unsupported("+", left, right);
}

Result<Value> multiply(const Value& left, const Value& right, Budget& budget) {
    if (left.is_integral() && right.is_integral()) {
        int64_t product = 0;
        if (__builtin_mul_overflow(left.as_int(), right.as_int(), &product)) return overflow();
        return Value::integer(product);
    }
    if (left.is_numeric() && right.is_numeric()) return Value::number(left.as_double() * right.as_double());
    if ((left.is_string() || left.is_list()) && right.is_integral()) return repeat(left, right.as_int(), budget);
    if ((right.is_string() || right.is_list()) && left.is_integral()) return repeat(right, left.as_int(), budget);
    return unsupported("*", left, right);
}

Result<Value> divide(std::string_view op, const Value& left, const Value& right) {
    if (!left.is_numeric() || !right.is_numeric()) return unsupported(op, left, right);
    if (op == "/") {
        if (right.as_double() == 0) return invalid_argument("division by zero");
        return Value::number(left.as_double() / right.as_double());
    }
    if (left.is_integral() && right.is_integral()) {
        const int64_t x = left.as_int();
        const int64_t y = right.as_int();
        if (y == 0) return invalid_argument("integer division or modulo by zero");
        if (x == INT64_MIN && y == -1) return op == "//" ? Result<Value>(overflow()) : Result<Value>(Value::integer(0));
        int64_t quotient = x / y;
        int64_t remainder = x % y;
        if (remainder != 0 && ((remainder < 0) != (y < 0))) {
            quotient -= 1;
            remainder += y;
        }
        return Value::integer(op == "//" ? quotient : remainder);
    }
    if (right.as_double() == 0) return invalid_argument("float floor division or modulo by zero");
    const auto [floordiv, mod] = float_divmod(left.as_double(), right.as_double());
    return Value::number(op == "//" ? floordiv : mod);
}

Result<Value> power(const Value& left, const Value& right) {
    if (!left.is_numeric() || !right.is_numeric()) return unsupported("** or pow()", left, right);
    if (left.is_integral() && right.is_integral() && right.as_int() >= 0) {
        int64_t result = 1;
        int64_t base = left.as_int();
        for (int64_t exponent = right.as_int(); exponent > 0; exponent >>= 1) {
            if ((exponent & 1) && __builtin_mul_overflow(result, base, &result)) return overflow();
            if (exponent > 1 && __builtin_mul_overflow(base, base, &base)) return overflow();
        }
        return Value::integer(result);
    }
    if (left.as_double() == 0 && right.as_double() < 0) {
        return invalid_argument("0.0 cannot be raised to a negative power");
    }
    return Value::number(std::pow(left.as_double(), right.as_double()));
}

}  // namespace

Result<Value> binary_op(std::string_view op, const Value& left, const Value& right, Budget& budget) {
    if (op == "%" && left.is_string()) {
        // str % anything formats; even an undefined argument is only an error once a field reads it.
        return percent_format(left.as_string(), right, budget);
    }
    if (left.is_undefined()) return undefined_error(left);
    if (right.is_undefined()) return undefined_error(right);
    if (op == "+") return add(left, right, budget);
    if (op == "-") {
        if (left.is_integral() && right.is_integral()) {
            int64_t difference = 0;
            if (__builtin_sub_overflow(left.as_int(), right.as_int(), &difference)) return overflow();
            return Value::integer(difference);
        }
        if (left.is_numeric() && right.is_numeric()) return Value::number(left.as_double() - right.as_double());
        return unsupported("-", left, right);
    }
    if (op == "*") return multiply(left, right, budget);
    if (op == "/" || op == "//" || op == "%") return divide(op, left, right);
    if (op == "**") return power(left, right);
    return invalid_argument("unknown operator '" + std::string(op) + "'");
}

Result<Value> unary_op(std::string_view op, const Value& operand) {
    if (operand.is_undefined()) return undefined_error(operand);
    if (operand.is_integral()) {
        if (op == "+") return Value::integer(operand.as_int());
        if (operand.as_int() == INT64_MIN) return overflow();
        return Value::integer(-operand.as_int());
    }
    if (operand.is_float()) return Value::number(op == "-" ? -operand.as_double() : operand.as_double());
    return invalid_argument("bad operand type for unary " + std::string(op) + ": '" + operand.type_name() + "'");
}

Result<bool> compare_op(std::string_view op, const Value& left, const Value& right, Budget& budget) {
    // Comparing walks both sides as far as the smaller; a search walks the whole container.
    TERN_RETURN_IF_ERROR(op == "in" || op == "not in" ? budget.charge_walk(right) : budget.charge_walk(left, right));
    if (op == "==") return values_equal(left, right);
    if (op == "!=") return !values_equal(left, right);
    if (op == "in") return value_in(left, right);
    if (op == "not in") {
        TERN_ASSIGN_OR_RETURN(const bool found, value_in(left, right));
        return !found;
    }
    if (left.is_undefined()) return undefined_error(left);
    if (right.is_undefined()) return undefined_error(right);
    const std::optional<int> order = compare_values(left, right);
    if (!order) {
        return invalid_argument(quoted(op) + " not supported between instances of " + quoted(left.type_name()) +
                                " and " + quoted(right.type_name()));
    }
    if (op == "<") return *order < 0;
    if (op == "<=") return *order <= 0;
    if (op == ">") return *order > 0;
    return *order >= 0;
}

}  // namespace tern::chat::jinja
