// Runs a parsed template against a context: statements append to the output, expressions evaluate to values.
// Scopes follow Jinja2: a for-loop body gets a fresh scope each iteration (its assignments do not outlive the
// iteration), `if` gets none, macros see their parameters and the template's top level. Every failure comes back as
// a Status whose message starts with the line and column of the expression or statement that failed.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/ast.h"
#include "chat/runtime.h"
#include "chat/value.h"

namespace tern::chat::jinja {

// One render. Not thread-safe; make one per render (the template it walks may be shared).
class Evaluator {
public:
    // `context` is the dict of variables the template sees (messages, bos_token, ...).
    Evaluator(const Value& context, const RenderOptions& options);
    ~Evaluator();
    Evaluator(const Evaluator&) = delete;
    Evaluator& operator=(const Evaluator&) = delete;

    Result<std::string> render(const Body& body);

private:
    enum class Flow { kNormal, kBreak, kContinue };

    struct Scope {
        Scope* parent = nullptr;
        std::vector<std::pair<std::string, Value>> vars;

        const Value* find(std::string_view name) const;
        void set(std::string_view name, Value value);
    };

    // Statements (evaluator.cc).
    Result<Flow> exec_body(const Body& body, Scope& scope, std::string& out);
    Result<Flow> exec(const Stmt& stmt, Scope& scope, std::string& out);
    Result<Flow> exec_if(const Stmt& stmt, Scope& scope, std::string& out);
    Result<Flow> exec_for(const Stmt& stmt, Scope& scope, std::string& out);
    Status exec_set(const Stmt& stmt, Scope& scope, Value value);
    Status bind_targets(const std::vector<std::string>& targets, const Value& value, Scope& scope, SourcePos pos);
    Value make_loop(const List& items, size_t index);
    Status append(std::string& out, std::string_view text, SourcePos pos);

    // Expressions (evaluator_expr.cc).
    Result<Value> eval(const Expr& expr, Scope& scope);
    Result<Value> eval_collection(const Expr& expr, Scope& scope);
    Result<Value> eval_compare(const Expr& expr, Scope& scope);
    Result<Value> eval_call(const Expr& expr, Scope& scope);
    Result<Value> eval_filter(const Expr& expr, Scope& scope, const Value* block_input);
    Result<Value> eval_test(const Expr& expr, Scope& scope);
    Result<CallArgs> eval_args(const Expr& expr, size_t first, Scope& scope);
    Result<Value> call_value(const Value& callee, const CallArgs& args, SourcePos pos);
    Result<Value> call_macro(const Stmt& macro, const CallArgs& args, SourcePos pos);
    Value lookup(std::string_view name, const Scope& scope) const;

    const Value& context_;
    Budget budget_;
    Scope root_;
    std::vector<Value> namespaces_;  // every namespace() made, emptied at the end to break reference cycles
    int call_depth_ = 0;
};

// Adds the position to an error raised without one (by a builtin or an operator); keeps the status code.
Status at_position(SourcePos pos, const Status& status);

}  // namespace tern::chat::jinja
