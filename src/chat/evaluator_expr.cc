// Expression evaluation: names, literals, lookups, operators, calls, filters and tests.
#include "chat/builtins.h"
#include "chat/py_string.h"
#include "chat/evaluator.h"
#include "chat/operators.h"

namespace tern::chat::jinja {
namespace {

// Returns the value, or the error positioned at `pos` (builtins and operators raise errors without a place).
template <typename T>
Result<T> placed(SourcePos pos, Result<T> result) {
    if (result.is_ok()) return result;
    return at_position(pos, result.status());
}

}  // namespace

Value Evaluator::lookup(std::string_view name, const Scope& scope) const {
    for (const Scope* s = &scope; s != nullptr; s = s->parent) {
        if (const Value* found = s->find(name)) return *found;
    }
    if (context_.is_dict()) {
        if (const Value* found = context_.as_dict().find(name)) return *found;
    }
    if (is_global_function(name)) {
        Callable global;
        global.kind = Callable::Kind::kGlobal;
        global.name = std::string(name);
        return Value::callable(std::move(global));
    }
    return Value::undefined(quoted(name) + " is undefined");
}

Result<Value> Evaluator::eval(const Expr& expr, Scope& scope) {
    switch (expr.kind) {
        case ExprKind::kLiteral:
            return expr.literal;
        case ExprKind::kName:
            return lookup(expr.name, scope);
        case ExprKind::kList:
        case ExprKind::kTuple:
        case ExprKind::kDict:
            return eval_collection(expr, scope);
        case ExprKind::kGetAttr: {
            TERN_ASSIGN_OR_RETURN(const Value object, eval(*expr.args[0], scope));
            return placed(expr.pos, get_attribute(object, expr.name));
        }
        case ExprKind::kGetItem: {
            TERN_ASSIGN_OR_RETURN(const Value object, eval(*expr.args[0], scope));
            TERN_ASSIGN_OR_RETURN(const Value key, eval(*expr.args[1], scope));
            return placed(expr.pos, get_item(object, key));
        }
        case ExprKind::kSlice: {
            if (!expr.args[0]) return positioned_error(expr.pos, "a slice is only allowed as the whole subscript");
            Value parts[4];
            for (size_t i = 0; i < 4; ++i) {
                if (!expr.args[i]) continue;
                TERN_ASSIGN_OR_RETURN(parts[i], eval(*expr.args[i], scope));
            }
            return placed(expr.pos, slice_value(parts[0], parts[1], parts[2], parts[3], budget_));
        }
        case ExprKind::kUnary: {
            TERN_ASSIGN_OR_RETURN(const Value operand, eval(*expr.args[0], scope));
            return placed(expr.pos, unary_op(expr.name, operand));
        }
        case ExprKind::kBinary: {
            TERN_ASSIGN_OR_RETURN(const Value left, eval(*expr.args[0], scope));
            TERN_ASSIGN_OR_RETURN(const Value right, eval(*expr.args[1], scope));
            return placed(expr.pos, binary_op(expr.name, left, right, budget_));
        }
        case ExprKind::kCompare:
            return eval_compare(expr, scope);
        case ExprKind::kAnd:
        case ExprKind::kOr: {
            TERN_ASSIGN_OR_RETURN(Value left, eval(*expr.args[0], scope));
            // Python's and / or return an operand, not a bool.
            if (left.truthy() == (expr.kind == ExprKind::kOr)) return left;
            return eval(*expr.args[1], scope);
        }
        case ExprKind::kNot: {
            TERN_ASSIGN_OR_RETURN(const Value operand, eval(*expr.args[0], scope));
            return Value::boolean(!operand.truthy());
        }
        case ExprKind::kCondition: {
            TERN_ASSIGN_OR_RETURN(const Value condition, eval(*expr.args[0], scope));
            if (condition.truthy()) return eval(*expr.args[1], scope);
            if (expr.args[2]) return eval(*expr.args[2], scope);
            return Value::undefined("the inline if-expression on line " + std::to_string(expr.pos.line) +
                                    " evaluated to false and no else section was defined");
        }
        case ExprKind::kConcat: {
            std::string text;
            for (const ExprPtr& part : expr.args) {
                TERN_ASSIGN_OR_RETURN(const Value value, eval(*part, scope));
                text += value.str(budget_.options().max_output_bytes);
                if (text.size() > budget_.options().max_output_bytes) {
                    return at_position(expr.pos, budget_.charge_string(text.size()));
                }
            }
            if (Status status = budget_.charge_string(text.size()); !status.is_ok()) return at_position(expr.pos, status);
            return Value::string(std::move(text));
        }
        case ExprKind::kCall:
            return eval_call(expr, scope);
        case ExprKind::kFilter:
            return eval_filter(expr, scope, nullptr);
        case ExprKind::kTest:
            return eval_test(expr, scope);
    }
    return positioned_error(expr.pos, "unknown expression");
}

Result<Value> Evaluator::eval_collection(const Expr& expr, Scope& scope) {
    if (Status status = budget_.charge_items(expr.args.size() + 1); !status.is_ok()) return at_position(expr.pos, status);
    Value result;
    if (expr.kind == ExprKind::kDict) {
        Dict dict;
        for (size_t i = 0; i + 1 < expr.args.size(); i += 2) {
            TERN_ASSIGN_OR_RETURN(Value key, eval(*expr.args[i], scope));
            TERN_ASSIGN_OR_RETURN(Value value, eval(*expr.args[i + 1], scope));
            if (key.is_undefined() || key.is_list() || key.is_dict()) {
                return positioned_error(expr.args[i]->pos, std::string("unhashable type: '") + key.type_name() + "'");
            }
            dict.set(std::move(key), std::move(value));
        }
        result = Value::dict(std::move(dict));
    } else {
        List items;
        items.reserve(expr.args.size());
        for (const ExprPtr& item : expr.args) {
            TERN_ASSIGN_OR_RETURN(Value value, eval(*item, scope));
            items.push_back(std::move(value));
        }
        result = expr.kind == ExprKind::kTuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    if (result.depth() > kMaxValueDepth) return positioned_error(expr.pos, "value nested too deeply");
    return result;
}

Result<Value> Evaluator::eval_compare(const Expr& expr, Scope& scope) {
    TERN_ASSIGN_OR_RETURN(Value left, eval(*expr.args[0], scope));
    for (size_t i = 0; i < expr.ops.size(); ++i) {
        TERN_ASSIGN_OR_RETURN(Value right, eval(*expr.args[i + 1], scope));
        TERN_ASSIGN_OR_RETURN(const bool holds, placed(expr.pos, compare_op(expr.ops[i], left, right, budget_)));
        if (!holds) return Value::boolean(false);
        left = std::move(right);
    }
    return Value::boolean(true);
}

Result<CallArgs> Evaluator::eval_args(const Expr& expr, size_t first, Scope& scope) {
    CallArgs args;
    for (size_t i = first; i < expr.args.size(); ++i) {
        TERN_ASSIGN_OR_RETURN(Value value, eval(*expr.args[i], scope));
        args.positional.push_back(std::move(value));
    }
    for (const Keyword& keyword : expr.kwargs) {
        TERN_ASSIGN_OR_RETURN(Value value, eval(*keyword.value, scope));
        args.keywords.emplace_back(keyword.name, std::move(value));
    }
    return args;
}

Result<Value> Evaluator::eval_call(const Expr& expr, Scope& scope) {
    const Expr& callee_expr = *expr.args[0];
    TERN_ASSIGN_OR_RETURN(const Value callee, eval(callee_expr, scope));
    TERN_ASSIGN_OR_RETURN(const CallArgs args, eval_args(expr, 1, scope));
    return call_value(callee, args, expr.pos);
}

Result<Value> Evaluator::call_value(const Value& callee, const CallArgs& args, SourcePos pos) {
    if (callee.is_undefined()) return at_position(pos, undefined_error(callee));
    if (!callee.is_callable()) {
        return positioned_error(pos, std::string("'") + callee.type_name() + "' object is not callable");
    }
    const Callable& callable = callee.as_callable();
    switch (callable.kind) {
        case Callable::Kind::kGlobal: {
            TERN_ASSIGN_OR_RETURN(Value result, placed(pos, call_global(callable.name, args, budget_)));
            if (result.is_namespace()) namespaces_.push_back(result);
            return result;
        }
        case Callable::Kind::kMethod:
            return placed(pos, call_method(callable.receiver, callable.name, args, budget_));
        case Callable::Kind::kMacro:
            return call_macro(*static_cast<const Stmt*>(callable.node), args, pos);
        case Callable::Kind::kLoopCycle:
            if (args.positional.empty()) return positioned_error(pos, "no items for cycling given");
            return args.positional[static_cast<size_t>(callable.receiver.as_int()) % args.positional.size()];
    }
    return positioned_error(pos, "unknown callable");
}

Result<Value> Evaluator::call_macro(const Stmt& macro, const CallArgs& args, SourcePos pos) {
    if (call_depth_ >= budget_.options().max_call_depth) {
        return positioned_error(pos, "macro calls nested deeper than " + std::to_string(budget_.options().max_call_depth));
    }
    if (args.positional.size() > macro.params.size()) {
        return positioned_error(pos, "macro '" + macro.text + "' takes not more than " +
                                         std::to_string(macro.params.size()) + " argument(s)");
    }
    Scope frame{&root_, {}};
    std::vector<bool> given(macro.params.size(), false);
    for (size_t i = 0; i < args.positional.size(); ++i) {
        frame.set(macro.params[i].name, args.positional[i]);
        given[i] = true;
    }
    for (const auto& [name, value] : args.keywords) {
        size_t idx = 0;
        while (idx < macro.params.size() && macro.params[idx].name != name) ++idx;
        if (idx == macro.params.size()) {
            return positioned_error(pos, "macro '" + macro.text + "' got an unexpected keyword argument '" + name + "'");
        }
        frame.set(name, value);
        given[idx] = true;
    }
    for (size_t i = 0; i < macro.params.size(); ++i) {
        if (given[i]) continue;
        if (macro.params[i].default_value) {
            TERN_ASSIGN_OR_RETURN(Value value, eval(*macro.params[i].default_value, frame));
            frame.set(macro.params[i].name, std::move(value));
        } else {
            frame.set(macro.params[i].name, Value::undefined("parameter '" + macro.params[i].name + "' was not provided"));
        }
    }
    ++call_depth_;
    std::string out;
    Result<Flow> flow = exec_body(macro.body, frame, out);
    --call_depth_;
    if (!flow.is_ok()) return flow.status();
    return Value::string(std::move(out));
}

Result<Value> Evaluator::eval_filter(const Expr& expr, Scope& scope, const Value* block_input) {
    Value input;
    if (expr.args[0]) {
        TERN_ASSIGN_OR_RETURN(input, expr.args[0]->kind == ExprKind::kFilter
                                         ? eval_filter(*expr.args[0], scope, block_input)
                                         : eval(*expr.args[0], scope));
    } else if (block_input != nullptr) {
        input = *block_input;
    }
    TERN_ASSIGN_OR_RETURN(const CallArgs args, eval_args(expr, 1, scope));
    const FilterFn filter = find_filter(expr.name);
    if (filter == nullptr) return positioned_error(expr.pos, "no filter named '" + expr.name + "'");
    return placed(expr.pos, filter(input, args, budget_));
}

Result<Value> Evaluator::eval_test(const Expr& expr, Scope& scope) {
    TERN_ASSIGN_OR_RETURN(const Value input, eval(*expr.args[0], scope));
    TERN_ASSIGN_OR_RETURN(const CallArgs args, eval_args(expr, 1, scope));
    const TestFn test = find_test(expr.name);
    if (test == nullptr) return positioned_error(expr.pos, "no test named '" + expr.name + "'");
    TERN_ASSIGN_OR_RETURN(const bool passed, placed(expr.pos, run_test(test, input, args, budget_)));
    return Value::boolean(passed != expr.negated);
}

}  // namespace tern::chat::jinja
