// Expression parsing: Jinja2's precedence climbing, from conditional expressions down to primaries, postfix
// subscripts and calls, and filter / test chains.
#include <algorithm>

#include "chat/builtins.h"
#include "chat/parser.h"

namespace tern::chat::jinja {
namespace {

// Counts a recursive parse and refuses to go deeper than an expression may be tall.
class DepthGuard {
public:
    explicit DepthGuard(int& depth) : depth_(depth) { ++depth_; }
    ~DepthGuard() { --depth_; }
    bool too_deep() const { return depth_ > kMaxExprHeight; }

private:
    int& depth_;
};

bool is_literal_name(std::string_view name) {
    return name == "true" || name == "false" || name == "none" || name == "True" || name == "False" || name == "None";
}

Value literal_of(std::string_view name) {
    if (name == "true" || name == "True") return Value::boolean(true);
    if (name == "false" || name == "False") return Value::boolean(false);
    return Value::none();
}

}  // namespace

Result<ExprPtr> Parser::finish(ExprPtr node) {
    int height = 0;
    for (const ExprPtr& arg : node->args) {
        if (arg) height = std::max(height, arg->height);
    }
    for (const Keyword& keyword : node->kwargs) height = std::max(height, keyword.value->height);
    node->height = height + 1;
    if (node->height > kMaxExprHeight) return positioned_error(node->pos, "expression nested too deeply");
    return node;
}

Result<ExprPtr> Parser::make(ExprKind kind, SourcePos pos, std::vector<ExprPtr> args, std::string name) {
    auto node = std::make_unique<Expr>();
    node->kind = kind;
    node->pos = pos;
    node->args = std::move(args);
    node->name = std::move(name);
    return finish(std::move(node));
}

bool Parser::is_tuple_end(std::initializer_list<std::string_view> extra_end) const {
    if (at(TokenKind::kVariableEnd) || at(TokenKind::kBlockEnd) || at_op(")")) return true;
    return at(TokenKind::kName) && std::find(extra_end.begin(), extra_end.end(), current().text) != extra_end.end();
}

Result<ExprPtr> Parser::parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                                    bool explicit_parentheses) {
    const SourcePos pos = current().pos;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
        if (!items.empty()) TERN_RETURN_IF_ERROR(expect_op(","));
        if (is_tuple_end(extra_end)) break;
        TERN_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(with_condexpr));
        items.push_back(std::move(item));
        if (!at_op(",")) break;
        is_tuple = true;
    }
    if (!is_tuple) {
        if (!items.empty()) return std::move(items[0]);
        if (!explicit_parentheses) return error_here("expected an expression, got " + describe(current()));
    }
    return make(ExprKind::kTuple, pos, std::move(items));
}

Result<ExprPtr> Parser::parse_expression(bool with_condexpr) {
    DepthGuard guard(expr_depth_);
    if (guard.too_deep()) return error_here("expression nested too deeply");
    return with_condexpr ? parse_condexpr() : parse_or();
}

Result<ExprPtr> Parser::parse_condexpr() {
    TERN_ASSIGN_OR_RETURN(ExprPtr then_expr, parse_or());
    while (at_name("if")) {
        const SourcePos pos = current().pos;
        advance();
        TERN_ASSIGN_OR_RETURN(ExprPtr condition, parse_or());
        ExprPtr else_expr;
        if (skip_name("else")) {
            DepthGuard guard(expr_depth_);
            if (guard.too_deep()) return error_here("expression nested too deeply");
            TERN_ASSIGN_OR_RETURN(else_expr, parse_condexpr());
        }
        std::vector<ExprPtr> args;
        args.push_back(std::move(condition));
        args.push_back(std::move(then_expr));
        args.push_back(std::move(else_expr));
        TERN_ASSIGN_OR_RETURN(then_expr, make(ExprKind::kCondition, pos, std::move(args)));
    }
    return then_expr;
}

Result<ExprPtr> Parser::parse_or() {
    TERN_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
    while (at_name("or")) {
        const SourcePos pos = current().pos;
        advance();
        TERN_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
        std::vector<ExprPtr> args;
        args.push_back(std::move(left));
        args.push_back(std::move(right));
        TERN_ASSIGN_OR_RETURN(left, make(ExprKind::kOr, pos, std::move(args)));
    }
    return left;
}

Result<ExprPtr> Parser::parse_and() {
    TERN_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
    while (at_name("and")) {
        const SourcePos pos = current().pos;
        advance();
        TERN_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
        std::vector<ExprPtr> args;
        args.push_back(std::move(left));
        args.push_back(std::move(right));
        TERN_ASSIGN_OR_RETURN(left, make(ExprKind::kAnd, pos, std::move(args)));
    }
    return left;
}

Result<ExprPtr> Parser::parse_not() {
    if (!at_name("not")) return parse_compare();
    const SourcePos pos = current().pos;
    advance();
    DepthGuard guard(expr_depth_);
    if (guard.too_deep()) return error_here("expression nested too deeply");
    TERN_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
    std::vector<ExprPtr> args;
    args.push_back(std::move(operand));
    return make(ExprKind::kNot, pos, std::move(args));
}

Result<ExprPtr> Parser::parse_compare() {
    const SourcePos pos = current().pos;
    TERN_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
    auto node = std::make_unique<Expr>();
    node->kind = ExprKind::kCompare;
    node->args.push_back(std::move(first));
    while (true) {
        std::string op;
        if (at(TokenKind::kOperator) && (current().text == "==" || current().text == "!=" || current().text == "<" ||
                                         current().text == "<=" || current().text == ">" || current().text == ">=")) {
            op = current().text;
            advance();
        } else if (at_name("in")) {
            op = "in";
            advance();
        } else if (at_name("not") && peek().kind == TokenKind::kName && peek().text == "in") {
            op = "not in";
            advance();
            advance();
        } else {
            break;
        }
        if (node->ops.empty()) node->pos = pos;
        TERN_ASSIGN_OR_RETURN(ExprPtr operand, parse_math1());
        node->ops.push_back(std::move(op));
        node->args.push_back(std::move(operand));
    }
    if (node->ops.empty()) return std::move(node->args[0]);
    return finish(std::move(node));
}

Result<ExprPtr> Parser::parse_math1() {
    TERN_ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
    while (at_op("+") || at_op("-")) {
        const SourcePos pos = current().pos;
        std::string op = current().text;
        advance();
        TERN_ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
        std::vector<ExprPtr> args;
        args.push_back(std::move(left));
        args.push_back(std::move(right));
        TERN_ASSIGN_OR_RETURN(left, make(ExprKind::kBinary, pos, std::move(args), std::move(op)));
    }
    return left;
}

Result<ExprPtr> Parser::parse_concat() {
    TERN_ASSIGN_OR_RETURN(ExprPtr first, parse_math2());
    if (!at_op("~")) return first;
    const SourcePos pos = current().pos;
    std::vector<ExprPtr> args;
    args.push_back(std::move(first));
    while (skip_op("~")) {
        TERN_ASSIGN_OR_RETURN(ExprPtr next, parse_math2());
        args.push_back(std::move(next));
    }
    return make(ExprKind::kConcat, pos, std::move(args));
}

Result<ExprPtr> Parser::parse_math2() {
    TERN_ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
        const SourcePos pos = current().pos;
        std::string op = current().text;
        advance();
        TERN_ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
        std::vector<ExprPtr> args;
        args.push_back(std::move(left));
        args.push_back(std::move(right));
        TERN_ASSIGN_OR_RETURN(left, make(ExprKind::kBinary, pos, std::move(args), std::move(op)));
    }
    return left;
}

Result<ExprPtr> Parser::parse_pow() {
    TERN_ASSIGN_OR_RETURN(ExprPtr left, parse_unary(true));
    while (at_op("**")) {
        const SourcePos pos = current().pos;
        advance();
        TERN_ASSIGN_OR_RETURN(ExprPtr right, parse_unary(true));
        std::vector<ExprPtr> args;
        args.push_back(std::move(left));
        args.push_back(std::move(right));
        TERN_ASSIGN_OR_RETURN(left, make(ExprKind::kBinary, pos, std::move(args), "**"));
    }
    return left;
}

Result<ExprPtr> Parser::parse_unary(bool with_filter) {
    DepthGuard guard(expr_depth_);
    if (guard.too_deep()) return error_here("expression nested too deeply");
    ExprPtr node;
    if (at_op("-") || at_op("+")) {
        const SourcePos pos = current().pos;
        std::string op = current().text;
        advance();
        TERN_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
        std::vector<ExprPtr> args;
        args.push_back(std::move(operand));
        TERN_ASSIGN_OR_RETURN(node, make(ExprKind::kUnary, pos, std::move(args), std::move(op)));
    } else {
        TERN_ASSIGN_OR_RETURN(node, parse_primary());
    }
    TERN_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
    if (with_filter) return parse_filter_expr(std::move(node));
    return node;
}

Result<ExprPtr> Parser::parse_primary() {
    const Token& token = current();
    const SourcePos pos = token.pos;
    auto literal = [&](Value value) -> Result<ExprPtr> {
        auto node = std::make_unique<Expr>();
        node->kind = ExprKind::kLiteral;
        node->pos = pos;
        node->literal = std::move(value);
        return node;
    };
    switch (token.kind) {
        case TokenKind::kName: {
            std::string name = token.text;
            advance();
            if (is_literal_name(name)) return literal(literal_of(name));
            auto node = std::make_unique<Expr>();
            node->kind = ExprKind::kName;
            node->pos = pos;
            node->name = std::move(name);
            return node;
        }
        case TokenKind::kString: {
            std::string text;
            while (at(TokenKind::kString)) {  // adjacent literals concatenate, as in Python
                text += current().text;
                advance();
            }
            return literal(Value::string(std::move(text)));
        }
        case TokenKind::kInteger:
            advance();
            return literal(Value::integer(tokens_[idx_ - 1].integer));
        case TokenKind::kFloat:
            advance();
            return literal(Value::number(tokens_[idx_ - 1].number));
        case TokenKind::kOperator:
            if (token.text == "(") {
                advance();
                TERN_ASSIGN_OR_RETURN(ExprPtr inner, parse_tuple(true, {}, true));
                TERN_RETURN_IF_ERROR(expect_op(")"));
                return inner;
            }
            if (token.text == "[") return parse_list();
            if (token.text == "{") return parse_dict();
            [[fallthrough]];
        default:
            return error_here("unexpected " + describe(token));
    }
}

Result<ExprPtr> Parser::parse_list() {
    const SourcePos pos = current().pos;
    advance();  // "["
    std::vector<ExprPtr> items;
    while (!at_op("]")) {
        if (!items.empty()) TERN_RETURN_IF_ERROR(expect_op(","));
        if (at_op("]")) break;
        TERN_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
        items.push_back(std::move(item));
    }
    advance();  // "]"
    return make(ExprKind::kList, pos, std::move(items));
}

Result<ExprPtr> Parser::parse_dict() {
    const SourcePos pos = current().pos;
    advance();  // "{"
    std::vector<ExprPtr> items;
    while (!at_op("}")) {
        if (!items.empty()) TERN_RETURN_IF_ERROR(expect_op(","));
        if (at_op("}")) break;
        TERN_ASSIGN_OR_RETURN(ExprPtr key, parse_expression());
        TERN_RETURN_IF_ERROR(expect_op(":"));
        TERN_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
        items.push_back(std::move(key));
        items.push_back(std::move(value));
    }
    advance();  // "}"
    return make(ExprKind::kDict, pos, std::move(items));
}

Result<ExprPtr> Parser::parse_postfix(ExprPtr node) {
    while (true) {
        if (at_op(".") || at_op("[")) {
            TERN_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node)));
        } else if (at_op("(")) {
            TERN_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
        } else {
            return node;
        }
    }
}

Result<ExprPtr> Parser::parse_filter_expr(ExprPtr node) {
    while (true) {
        if (at_op("|")) {
            TERN_ASSIGN_OR_RETURN(node, parse_filter(std::move(node)));
        } else if (at_name("is")) {
            TERN_ASSIGN_OR_RETURN(node, parse_test(std::move(node)));
        } else if (at_op("(")) {
            TERN_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
        } else {
            return node;
        }
    }
}

Result<ExprPtr> Parser::parse_subscript(ExprPtr node) {
    const SourcePos pos = current().pos;
    std::vector<ExprPtr> args;
    if (skip_op(".")) {
        const Token& attribute = current();
        args.push_back(std::move(node));
        if (attribute.kind == TokenKind::kName) {
            std::string name = attribute.text;
            advance();
            return make(ExprKind::kGetAttr, pos, std::move(args), std::move(name));
        }
        if (attribute.kind == TokenKind::kInteger) {
            auto index = std::make_unique<Expr>();
            index->kind = ExprKind::kLiteral;
            index->pos = attribute.pos;
            index->literal = Value::integer(attribute.integer);
            advance();
            args.push_back(std::move(index));
            return make(ExprKind::kGetItem, pos, std::move(args));
        }
        return error_here("expected a name or number after '.', got " + describe(attribute));
    }
    advance();  // "["
    std::vector<ExprPtr> subscripts;
    while (!at_op("]")) {
        if (!subscripts.empty()) TERN_RETURN_IF_ERROR(expect_op(","));
        TERN_ASSIGN_OR_RETURN(ExprPtr subscript, parse_subscribed());
        subscripts.push_back(std::move(subscript));
    }
    advance();  // "]"
    if (subscripts.empty()) return positioned_error(pos, "expected a subscript inside '[]'");
    ExprPtr key;
    if (subscripts.size() == 1) {
        key = std::move(subscripts[0]);
    } else {
        TERN_ASSIGN_OR_RETURN(key, make(ExprKind::kTuple, pos, std::move(subscripts)));
    }
    if (key->kind == ExprKind::kSlice) {
        key->args[0] = std::move(node);
        key->pos = pos;
        return finish(std::move(key));
    }
    args.push_back(std::move(node));
    args.push_back(std::move(key));
    return make(ExprKind::kGetItem, pos, std::move(args));
}

// One subscript: an expression, or a slice "start:stop:step" whose object the caller fills in as args[0].
Result<ExprPtr> Parser::parse_subscribed() {
    const SourcePos pos = current().pos;
    std::vector<ExprPtr> args(1);
    if (at_op(":")) {
        args.emplace_back();
    } else {
        TERN_ASSIGN_OR_RETURN(ExprPtr start, parse_expression());
        if (!at_op(":")) return start;
        args.push_back(std::move(start));
    }
    advance();  // ":"
    const auto bound = [&]() -> Result<ExprPtr> {
        if (at_op("]") || at_op(",") || at_op(":")) return ExprPtr();
        return parse_expression();
    };
    TERN_ASSIGN_OR_RETURN(ExprPtr stop, bound());
    args.push_back(std::move(stop));
    ExprPtr step;
    if (skip_op(":")) {
        TERN_ASSIGN_OR_RETURN(step, bound());
    }
    args.push_back(std::move(step));
    auto slice = std::make_unique<Expr>();
    slice->kind = ExprKind::kSlice;
    slice->pos = pos;
    slice->args = std::move(args);
    return slice;
}

Result<ExprPtr> Parser::parse_call(ExprPtr callee) {
    auto call = std::make_unique<Expr>();
    call->kind = ExprKind::kCall;
    call->pos = callee->pos;
    call->args.push_back(std::move(callee));
    TERN_RETURN_IF_ERROR(parse_call_args(*call));
    return finish(std::move(call));
}

Status Parser::parse_call_args(Expr& call) {
    TERN_RETURN_IF_ERROR(expect_op("("));
    bool first = true;
    while (!at_op(")")) {
        if (!first) {
            TERN_RETURN_IF_ERROR(expect_op(","));
            if (at_op(")")) break;
        }
        first = false;
        if (at_op("*") || at_op("**")) return error_here("*args and **kwargs in calls are not supported");
        if (at(TokenKind::kName) && peek().kind == TokenKind::kOperator && peek().text == "=") {
            Keyword keyword;
            keyword.name = current().text;
            advance();
            advance();
            TERN_ASSIGN_OR_RETURN(keyword.value, parse_expression());
            call.kwargs.push_back(std::move(keyword));
            continue;
        }
        if (!call.kwargs.empty()) return error_here("positional argument follows keyword argument");
        TERN_ASSIGN_OR_RETURN(ExprPtr arg, parse_expression());
        call.args.push_back(std::move(arg));
    }
    advance();  // ")"
    return Status::ok();
}

Result<ExprPtr> Parser::parse_filter(ExprPtr input, bool start_inline) {
    while (start_inline || at_op("|")) {
        if (!start_inline) advance();  // "|"
        start_inline = false;
        const SourcePos pos = current().pos;
        TERN_ASSIGN_OR_RETURN(std::string name, expect_identifier());
        while (skip_op(".")) {
            TERN_ASSIGN_OR_RETURN(std::string part, expect_identifier());
            name += "." + part;
        }
        if (find_filter(name) == nullptr) return positioned_error(pos, "no filter named '" + name + "'");
        auto filter = std::make_unique<Expr>();
        filter->kind = ExprKind::kFilter;
        filter->pos = pos;
        filter->name = std::move(name);
        filter->args.push_back(std::move(input));
        if (at_op("(")) TERN_RETURN_IF_ERROR(parse_call_args(*filter));
        TERN_ASSIGN_OR_RETURN(input, finish(std::move(filter)));
    }
    return input;
}

Result<ExprPtr> Parser::parse_test(ExprPtr input) {
    advance();  // "is"
    const bool negated = skip_name("not");
    const SourcePos pos = current().pos;
    TERN_ASSIGN_OR_RETURN(std::string name, expect_identifier());
    while (skip_op(".")) {
        TERN_ASSIGN_OR_RETURN(std::string part, expect_identifier());
        name += "." + part;
    }
    if (find_test(name) == nullptr) return positioned_error(pos, "no test named '" + name + "'");
    auto test = std::make_unique<Expr>();
    test->kind = ExprKind::kTest;
    test->pos = pos;
    test->name = std::move(name);
    test->negated = negated;
    test->args.push_back(std::move(input));
    if (at_op("(")) {
        TERN_RETURN_IF_ERROR(parse_call_args(*test));
    } else {
        // A single argument may follow without parentheses ("x is divisibleby 3"), as Jinja2 allows.
        const bool starts_argument =
            at(TokenKind::kName) || at(TokenKind::kString) || at(TokenKind::kInteger) || at(TokenKind::kFloat) ||
            at_op("(") || at_op("[") || at_op("{");
        if (starts_argument && !at_name("else") && !at_name("or") && !at_name("and")) {
            if (at_name("is")) return error_here("you cannot chain multiple tests with 'is'");
            TERN_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
            TERN_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
            test->args.push_back(std::move(arg));
        }
    }
    return finish(std::move(test));
}

}  // namespace tern::chat::jinja
