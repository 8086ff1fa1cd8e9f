// The syntax tree the parser builds and the evaluator walks. Nodes own their children; a parsed template is
// immutable, so one tree serves any number of concurrent renders.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/lexer.h"
#include "chat/value.h"

namespace tern::chat::jinja {

// Expressions taller than this, or statements nested deeper, are refused at parse time: evaluation recurses over
// the tree, so its height bounds the stack a render can use.
inline constexpr int kMaxExprHeight = 160;
inline constexpr int kMaxStmtDepth = 64;

enum class ExprKind {
    kLiteral,    // literal
    kName,       // name
    kList,       // args: items
    kTuple,      // args: items
    kDict,       // args: key0, value0, key1, value1, ...
    kGetAttr,    // args[0].name
    kGetItem,    // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]], any bound may be null
    kUnary,      // name ("-" or "+") args[0]
    kBinary,     // args[0] name args[1], name one of + - * / // % **
    kCompare,    // args[0] ops[0] args[1] ops[1] args[2] ...; ops: == != < <= > >= in "not in"
    kAnd,        // args[0] and args[1]
    kOr,         // args[0] or args[1]
    kNot,        // not args[0]
    kCondition,  // args[1] if args[0] else args[2] (args[2] may be null)
    kConcat,     // args joined with ~
    kCall,       // args[0](args[1..], kwargs)
    kFilter,     // args[0] | name(args[1..], kwargs); args[0] is null in a {% filter %} block
    kTest,       // args[0] is [not] name(args[1..], kwargs)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Keyword {
    std::string name;
    ExprPtr value;
};

struct Expr {
    ExprKind kind = ExprKind::kLiteral;
    SourcePos pos;
    int height = 1;
    Value literal;
    std::string name;
    std::vector<ExprPtr> args;
    std::vector<Keyword> kwargs;
    std::vector<std::string> ops;
    bool negated = false;  // kTest: "is not"
};

enum class StmtKind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // branches, else_body
    kFor,          // for targets in expr [if filter_condition]: body, else_body
    kSet,          // set targets = expr, or set targets[0].attribute = expr
    kSetBlock,     // set target: body captured, then piped through expr (a kFilter with a null input) if any
    kMacro,        // macro text(params): body
    kFilterBlock,  // filter expr: body
    kWith,         // with assignments: body
    kBreak,
    kContinue,
    kScope,        // body run in place: {% generation %} of Hugging Face's AssistantTracker
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct IfBranch {
    ExprPtr condition;
    Body body;
};

struct MacroParam {
    std::string name;
    ExprPtr default_value;  // null when required
};

struct Stmt {
    StmtKind kind = StmtKind::kText;
    SourcePos pos;
    std::string text;
    ExprPtr expr;
    ExprPtr filter_condition;
    std::vector<std::string> targets;
    std::string attribute;  // kSet / kSetBlock on a namespace attribute
    std::vector<IfBranch> branches;
    Body body;
    Body else_body;
    std::vector<MacroParam> params;
    std::vector<std::pair<std::string, ExprPtr>> assignments;
};

}  // namespace tern::chat::jinja
