// The Jinja2 parser: tokens to a syntax tree, following Jinja2's grammar and operator precedence (filters bind
// tighter than arithmetic, `not` looser than comparisons, implicit tuples in {{ }} and set). Unknown tags, filters
// and tests are errors here, as Jinja2 reports them when it compiles. Statements: if / elif / else, for (with
// else, tuple targets and a filtering `if`), set (names, namespace attributes, blocks), macro, filter, with,
// break / continue (the loopcontrols extension Hugging Face enables), print and {% generation %}.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/ast.h"
#include "chat/lexer.h"

namespace tern::chat::jinja {

class Parser {
public:
    // The template's statements, or the first syntax error with its line and column.
    static Result<Body> parse(std::string_view source, const LexOptions& options);

private:
    explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

    // Token stream.
    const Token& current() const { return tokens_[idx_]; }
    const Token& peek(size_t ahead = 1) const;
    void advance();
    bool at(TokenKind kind) const { return current().kind == kind; }
    bool at_name(std::string_view name) const;
    bool at_op(std::string_view op) const;
    bool skip_name(std::string_view name);
    bool skip_op(std::string_view op);
    Status expect_op(std::string_view op);
    Status expect_name(std::string_view name);
    Result<std::string> expect_identifier();
    Status expect_block_end();
    Status error_here(std::string_view message) const;
    static std::string describe(const Token& token);

    // Statements (parser.cc).
    Result<Body> parse_body(std::initializer_list<std::string_view> end_names);
    Result<StmtPtr> parse_statement();
    Result<StmtPtr> parse_if(SourcePos pos);
    Result<StmtPtr> parse_for(SourcePos pos);
    Result<StmtPtr> parse_set(SourcePos pos);
    Result<StmtPtr> parse_macro(SourcePos pos);
    Result<StmtPtr> parse_filter_block(SourcePos pos);
    Result<StmtPtr> parse_with(SourcePos pos);
    Result<StmtPtr> parse_block_with_body(StmtKind kind, SourcePos pos, std::string_view end_name);
    Result<std::vector<std::string>> parse_target_names();
    Status finish_block(std::string_view end_name);

    // Expressions (parser_expr.cc).
    Result<ExprPtr> parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end = {},
                                bool explicit_parentheses = false);
    Result<ExprPtr> parse_expression(bool with_condexpr = true);
    Result<ExprPtr> parse_condexpr();
    Result<ExprPtr> parse_or();
    Result<ExprPtr> parse_and();
    Result<ExprPtr> parse_not();
    Result<ExprPtr> parse_compare();
    Result<ExprPtr> parse_math1();
    Result<ExprPtr> parse_concat();
    Result<ExprPtr> parse_math2();
    Result<ExprPtr> parse_pow();
    Result<ExprPtr> parse_unary(bool with_filter);
    Result<ExprPtr> parse_primary();
    Result<ExprPtr> parse_list();
    Result<ExprPtr> parse_dict();
    Result<ExprPtr> parse_postfix(ExprPtr node);
    Result<ExprPtr> parse_filter_expr(ExprPtr node);
    Result<ExprPtr> parse_subscript(ExprPtr node);
    Result<ExprPtr> parse_subscribed();
    Result<ExprPtr> parse_call(ExprPtr callee);
    Status parse_call_args(Expr& call);
    Result<ExprPtr> parse_filter(ExprPtr input, bool start_inline = false);
    Result<ExprPtr> parse_test(ExprPtr input);
    Result<ExprPtr> make(ExprKind kind, SourcePos pos, std::vector<ExprPtr> args, std::string name = {});
    Result<ExprPtr> finish(ExprPtr node);
    bool is_tuple_end(std::initializer_list<std::string_view> extra_end) const;

    std::vector<Token> tokens_;
    size_t idx_ = 0;
    int stmt_depth_ = 0;  // statements nested around the one being parsed
    int expr_depth_ = 0;  // recursive expression parses in progress
    int loop_depth_ = 0;  // for-loops around the statement (break / continue need one)
};

}  // namespace tern::chat::jinja
