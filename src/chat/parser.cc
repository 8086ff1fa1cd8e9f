// Statement parsing and the token-stream helpers.
#include "chat/parser.h"

#include <algorithm>
#include <iterator>

namespace tern::chat::jinja {
namespace {

bool contains(std::initializer_list<std::string_view> names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

StmtPtr make_stmt(StmtKind kind, SourcePos pos) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = kind;
    stmt->pos = pos;
    return stmt;
}

// Tags of Jinja2 that chat templates never need and this interpreter does not implement.
constexpr std::string_view kUnsupportedTags[] = {"block", "extends", "include", "import", "from", "call",
                                                 "autoescape", "do"};

}  // namespace

Result<Body> Parser::parse(std::string_view source, const LexOptions& options) {
    TERN_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source, options));
    Parser parser(std::move(tokens));
    return parser.parse_body({});
}

const Token& Parser::peek(size_t ahead) const { return tokens_[std::min(idx_ + ahead, tokens_.size() - 1)]; }

void Parser::advance() {
    if (idx_ + 1 < tokens_.size()) ++idx_;
}

bool Parser::at_name(std::string_view name) const { return at(TokenKind::kName) && current().text == name; }

bool Parser::at_op(std::string_view op) const { return at(TokenKind::kOperator) && current().text == op; }

bool Parser::skip_name(std::string_view name) {
    if (!at_name(name)) return false;
    advance();
    return true;
}

bool Parser::skip_op(std::string_view op) {
    if (!at_op(op)) return false;
    advance();
    return true;
}

Status Parser::expect_op(std::string_view op) {
    if (skip_op(op)) return Status::ok();
    return error_here("expected '" + std::string(op) + "', got " + describe(current()));
}

Status Parser::expect_name(std::string_view name) {
    if (skip_name(name)) return Status::ok();
    return error_here("expected '" + std::string(name) + "', got " + describe(current()));
}

Result<std::string> Parser::expect_identifier() {
    if (!at(TokenKind::kName)) return error_here("expected a name, got " + describe(current()));
    std::string name = current().text;
    advance();
    return name;
}

Status Parser::expect_block_end() {
    if (at(TokenKind::kBlockEnd)) {
        advance();
        return Status::ok();
    }
    return error_here("expected the end of the statement '%}', got " + describe(current()));
}

Status Parser::error_here(std::string_view message) const { return positioned_error(current().pos, message); }

std::string Parser::describe(const Token& token) {
    switch (token.kind) {
        case TokenKind::kText: return "template text";
        case TokenKind::kVariableBegin: return "'{{'";
        case TokenKind::kVariableEnd: return "'}}'";
        case TokenKind::kBlockBegin: return "'{%'";
        case TokenKind::kBlockEnd: return "'%}'";
        case TokenKind::kName: return "'" + token.text + "'";
        case TokenKind::kString: return "a string";
        case TokenKind::kInteger:
        case TokenKind::kFloat: return "'" + token.text + "'";
        case TokenKind::kOperator: return "'" + token.text + "'";
        case TokenKind::kEnd: return "the end of the template";
    }
    return "a token";
}

Result<Body> Parser::parse_body(std::initializer_list<std::string_view> end_names) {
    Body body;
    while (true) {
        const Token& token = current();
        switch (token.kind) {
            case TokenKind::kText: {
                StmtPtr text = make_stmt(StmtKind::kText, token.pos);
                text->text = token.text;
                body.push_back(std::move(text));
                advance();
                break;
            }
            case TokenKind::kVariableBegin: {
                StmtPtr output = make_stmt(StmtKind::kOutput, token.pos);
                advance();
                TERN_ASSIGN_OR_RETURN(output->expr, parse_tuple(true));
                if (!at(TokenKind::kVariableEnd)) return error_here("expected '}}', got " + describe(current()));
                advance();
                body.push_back(std::move(output));
                break;
            }
            case TokenKind::kBlockBegin: {
                const Token& name = peek();
                if (name.kind == TokenKind::kName && contains(end_names, name.text)) {
                    advance();  // leave the end tag's name as the current token
                    return body;
                }
                advance();
                TERN_ASSIGN_OR_RETURN(StmtPtr stmt, parse_statement());
                body.push_back(std::move(stmt));
                break;
            }
            case TokenKind::kEnd: {
                if (end_names.size() == 0) return body;
                std::string expected;
                for (std::string_view name : end_names) expected += (expected.empty() ? "'" : " or '") + std::string(name) + "'";
                return error_here("unexpected end of template; expected " + expected);
            }
            default:
                return error_here("unexpected " + describe(token));
        }
    }
}

Result<StmtPtr> Parser::parse_statement() {
    if (!at(TokenKind::kName)) return error_here("tag name expected, got " + describe(current()));
    if (stmt_depth_ >= kMaxStmtDepth) return error_here("statements nested too deeply");
    ++stmt_depth_;
    struct Exit {
        int& depth;
        ~Exit() { --depth; }
    } exit{stmt_depth_};
    const SourcePos pos = current().pos;
    const std::string name = current().text;
    if (name == "if") return parse_if(pos);
    if (name == "for") return parse_for(pos);
    if (name == "set") return parse_set(pos);
    if (name == "macro") return parse_macro(pos);
    if (name == "filter") return parse_filter_block(pos);
    if (name == "with") return parse_with(pos);
    if (name == "generation") return parse_block_with_body(StmtKind::kScope, pos, "endgeneration");
    if (name == "break" || name == "continue") {
        if (loop_depth_ == 0) return error_here("'" + name + "' outside of a loop");
        advance();
        TERN_RETURN_IF_ERROR(expect_block_end());
        return make_stmt(name == "break" ? StmtKind::kBreak : StmtKind::kContinue, pos);
    }
    if (name == "print") {
        advance();
        StmtPtr output = make_stmt(StmtKind::kOutput, pos);
        TERN_ASSIGN_OR_RETURN(output->expr, parse_tuple(true));
        TERN_RETURN_IF_ERROR(expect_block_end());
        return output;
    }
    if (std::find(std::begin(kUnsupportedTags), std::end(kUnsupportedTags), name) != std::end(kUnsupportedTags)) {
        return error_here("the '" + name + "' tag is not supported in chat templates");
    }
    return error_here("encountered unknown tag '" + name + "'");
}

Status Parser::finish_block(std::string_view end_name) {
    TERN_RETURN_IF_ERROR(expect_name(end_name));
    return expect_block_end();
}

Result<StmtPtr> Parser::parse_if(SourcePos pos) {
    StmtPtr stmt = make_stmt(StmtKind::kIf, pos);
    advance();  // "if"
    while (true) {
        IfBranch branch;
        TERN_ASSIGN_OR_RETURN(branch.condition, parse_tuple(false));
        TERN_RETURN_IF_ERROR(expect_block_end());
        TERN_ASSIGN_OR_RETURN(branch.body, parse_body({"elif", "else", "endif"}));
        stmt->branches.push_back(std::move(branch));
        if (skip_name("elif")) continue;
        if (skip_name("else")) {
            TERN_RETURN_IF_ERROR(expect_block_end());
            TERN_ASSIGN_OR_RETURN(stmt->else_body, parse_body({"endif"}));
        }
        TERN_RETURN_IF_ERROR(finish_block("endif"));
        return stmt;
    }
}

Result<std::vector<std::string>> Parser::parse_target_names() {
    std::vector<std::string> names;
    const bool parenthesized = skip_op("(");
    do {
        TERN_ASSIGN_OR_RETURN(std::string name, expect_identifier());
        if (name == "true" || name == "false" || name == "none" || name == "True" || name == "False" || name == "None") {
            return error_here("cannot assign to '" + name + "'");
        }
        names.push_back(std::move(name));
    } while (skip_op(",") && !at_op(")") && !at_name("in") && !at_op("="));
    if (parenthesized) TERN_RETURN_IF_ERROR(expect_op(")"));
    return names;
}

Result<StmtPtr> Parser::parse_for(SourcePos pos) {
    StmtPtr stmt = make_stmt(StmtKind::kFor, pos);
    advance();  // "for"
    TERN_ASSIGN_OR_RETURN(stmt->targets, parse_target_names());
    TERN_RETURN_IF_ERROR(expect_name("in"));
    TERN_ASSIGN_OR_RETURN(stmt->expr, parse_tuple(false, {"recursive"}));
    if (skip_name("if")) {
        TERN_ASSIGN_OR_RETURN(stmt->filter_condition, parse_expression());
    }
    if (at_name("recursive")) return error_here("recursive loops are not supported");
    TERN_RETURN_IF_ERROR(expect_block_end());
    ++loop_depth_;
    Result<Body> body = parse_body({"endfor", "else"});
    --loop_depth_;
    if (!body.is_ok()) return body.status();
    stmt->body = std::move(body).value();
    if (skip_name("else")) {
        TERN_RETURN_IF_ERROR(expect_block_end());
        // The else branch runs when the loop did not: break and continue there belong to an outer loop.
        const int saved = loop_depth_;
        loop_depth_ = 0;
        Result<Body> else_body = parse_body({"endfor"});
        loop_depth_ = saved;
        if (!else_body.is_ok()) return else_body.status();
        stmt->else_body = std::move(else_body).value();
    }
    TERN_RETURN_IF_ERROR(finish_block("endfor"));
    return stmt;
}

Result<StmtPtr> Parser::parse_set(SourcePos pos) {
    StmtPtr stmt = make_stmt(StmtKind::kSet, pos);
    advance();  // "set"
    if (at(TokenKind::kName) && peek().kind == TokenKind::kOperator && peek().text == "." &&
        peek(2).kind == TokenKind::kName) {
        stmt->targets.push_back(current().text);
        stmt->attribute = peek(2).text;
        advance();
        advance();
        advance();
    } else {
        TERN_ASSIGN_OR_RETURN(stmt->targets, parse_target_names());
    }
    if (skip_op("=")) {
        TERN_ASSIGN_OR_RETURN(stmt->expr, parse_tuple(true));
        TERN_RETURN_IF_ERROR(expect_block_end());
        return stmt;
    }
    if (stmt->targets.size() != 1) return error_here("a block set assigns to one name");
    stmt->kind = StmtKind::kSetBlock;
    if (at_op("|")) {
        TERN_ASSIGN_OR_RETURN(stmt->expr, parse_filter(nullptr));
    }
    TERN_RETURN_IF_ERROR(expect_block_end());
    TERN_ASSIGN_OR_RETURN(stmt->body, parse_body({"endset"}));
    TERN_RETURN_IF_ERROR(finish_block("endset"));
    return stmt;
}

Result<StmtPtr> Parser::parse_macro(SourcePos pos) {
    StmtPtr stmt = make_stmt(StmtKind::kMacro, pos);
    advance();  // "macro"
    TERN_ASSIGN_OR_RETURN(stmt->text, expect_identifier());
    TERN_RETURN_IF_ERROR(expect_op("("));
    while (!at_op(")")) {
        if (!stmt->params.empty()) TERN_RETURN_IF_ERROR(expect_op(","));
        if (at_op(")")) break;
        MacroParam param;
        TERN_ASSIGN_OR_RETURN(param.name, expect_identifier());
        if (skip_op("=")) {
            TERN_ASSIGN_OR_RETURN(param.default_value, parse_expression());
        } else if (!stmt->params.empty() && stmt->params.back().default_value) {
            return error_here("non-default argument follows default argument");
        }
        stmt->params.push_back(std::move(param));
    }
    advance();  // ")"
    TERN_RETURN_IF_ERROR(expect_block_end());
    // A macro body is its own scope: loops around the definition do not surround its calls.
    const int saved = loop_depth_;
    loop_depth_ = 0;
    Result<Body> body = parse_body({"endmacro"});
    loop_depth_ = saved;
    if (!body.is_ok()) return body.status();
    stmt->body = std::move(body).value();
    TERN_RETURN_IF_ERROR(finish_block("endmacro"));
    return stmt;
}

Result<StmtPtr> Parser::parse_filter_block(SourcePos pos) {
    StmtPtr stmt = make_stmt(StmtKind::kFilterBlock, pos);
    advance();  // "filter"; the chain that follows starts without a "|"
    TERN_ASSIGN_OR_RETURN(stmt->expr, parse_filter(nullptr, true));
    TERN_RETURN_IF_ERROR(expect_block_end());
    TERN_ASSIGN_OR_RETURN(stmt->body, parse_body({"endfilter"}));
    TERN_RETURN_IF_ERROR(finish_block("endfilter"));
    return stmt;
}

Result<StmtPtr> Parser::parse_with(SourcePos pos) {
    StmtPtr stmt = make_stmt(StmtKind::kWith, pos);
    advance();  // "with"
    while (!at(TokenKind::kBlockEnd)) {
        if (!stmt->assignments.empty()) TERN_RETURN_IF_ERROR(expect_op(","));
        TERN_ASSIGN_OR_RETURN(std::string name, expect_identifier());
        TERN_RETURN_IF_ERROR(expect_op("="));
        TERN_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
        stmt->assignments.emplace_back(std::move(name), std::move(value));
    }
    TERN_RETURN_IF_ERROR(expect_block_end());
    TERN_ASSIGN_OR_RETURN(stmt->body, parse_body({"endwith"}));
    TERN_RETURN_IF_ERROR(finish_block("endwith"));
    return stmt;
}

Result<StmtPtr> Parser::parse_block_with_body(StmtKind kind, SourcePos pos, std::string_view end_name) {
    StmtPtr stmt = make_stmt(kind, pos);
    advance();  // the tag name
    TERN_RETURN_IF_ERROR(expect_block_end());
    TERN_ASSIGN_OR_RETURN(stmt->body, parse_body({end_name}));
    TERN_RETURN_IF_ERROR(finish_block(end_name));
    return stmt;
}

}  // namespace tern::chat::jinja
