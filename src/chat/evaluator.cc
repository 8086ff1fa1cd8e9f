// Statement execution: output, control flow, loops and assignments.
#include "chat/evaluator.h"

#include <array>

#include "chat/builtins.h"

namespace tern::chat::jinja {

Status at_position(SourcePos pos, const Status& status) {
    return {status.code(), positioned_message(pos, status.message())};
}

const Value* Evaluator::Scope::find(std::string_view name) const {
    for (const auto& [key, value] : vars) {
        if (key == name) return &value;
    }
    return nullptr;
}

void Evaluator::Scope::set(std::string_view name, Value value) {
    for (auto& [key, existing] : vars) {
        if (key == name) {
            existing = std::move(value);
            return;
        }
    }
    vars.emplace_back(std::string(name), std::move(value));
}

Evaluator::Evaluator(const Value& context, const RenderOptions& options) : context_(context), budget_(options) {}

Evaluator::~Evaluator() {
    // Namespaces are the only mutable values, so the only way to a reference cycle; emptying them all, while the
    // list still holds each one, frees everything without deep recursion.
    for (Value& ns : namespaces_) ns.namespace_dict().entries.clear();
}

Result<std::string> Evaluator::render(const Body& body) {
    std::string out;
    TERN_ASSIGN_OR_RETURN(const Flow flow, exec_body(body, root_, out));
    (void)flow;  // break and continue only parse inside loops
    return out;
}

Status Evaluator::append(std::string& out, std::string_view text, SourcePos pos) {
    if (out.size() + text.size() > budget_.options().max_output_bytes) {
        return at_position(pos, {StatusCode::kResourceExhausted,
                                 "the rendered prompt exceeds " + std::to_string(budget_.options().max_output_bytes) +
                                     " bytes"});
    }
    if (Status status = budget_.charge(text.size() / 64 + 1); !status.is_ok()) return at_position(pos, status);
    out.append(text);
    return Status::ok();
}

Result<Evaluator::Flow> Evaluator::exec_body(const Body& body, Scope& scope, std::string& out) {
    for (const StmtPtr& stmt : body) {
        TERN_ASSIGN_OR_RETURN(const Flow flow, exec(*stmt, scope, out));
        if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
}

Result<Evaluator::Flow> Evaluator::exec(const Stmt& stmt, Scope& scope, std::string& out) {
    switch (stmt.kind) {
        case StmtKind::kText:
            TERN_RETURN_IF_ERROR(append(out, stmt.text, stmt.pos));
            return Flow::kNormal;
        case StmtKind::kOutput: {
            TERN_ASSIGN_OR_RETURN(const Value value, eval(*stmt.expr, scope));
            TERN_RETURN_IF_ERROR(append(out, value.is_string() ? value.as_string() : value.str(budget_.options().max_output_bytes), stmt.pos));
            return Flow::kNormal;
        }
        case StmtKind::kIf:
            return exec_if(stmt, scope, out);
        case StmtKind::kFor:
            return exec_for(stmt, scope, out);
        case StmtKind::kSet: {
            TERN_ASSIGN_OR_RETURN(Value value, eval(*stmt.expr, scope));
            TERN_RETURN_IF_ERROR(exec_set(stmt, scope, std::move(value)));
            return Flow::kNormal;
        }
        case StmtKind::kSetBlock:
        case StmtKind::kFilterBlock: {
            std::string captured;
            TERN_ASSIGN_OR_RETURN(const Flow flow, exec_body(stmt.body, scope, captured));
            Value value = Value::string(std::move(captured));
            if (stmt.expr) {
                TERN_ASSIGN_OR_RETURN(value, eval_filter(*stmt.expr, scope, &value));
            }
            if (stmt.kind == StmtKind::kSetBlock) {
                TERN_RETURN_IF_ERROR(exec_set(stmt, scope, std::move(value)));
            } else {
                TERN_RETURN_IF_ERROR(append(out, value.str(budget_.options().max_output_bytes), stmt.pos));
            }
            return flow;
        }
        case StmtKind::kMacro: {
            Callable macro;
            macro.kind = Callable::Kind::kMacro;
            macro.name = stmt.text;
            macro.node = &stmt;
            scope.set(stmt.text, Value::callable(std::move(macro)));
            return Flow::kNormal;
        }
        case StmtKind::kWith: {
            Scope inner{&scope, {}};
            for (const auto& [name, expr] : stmt.assignments) {
                TERN_ASSIGN_OR_RETURN(Value value, eval(*expr, scope));
                inner.set(name, std::move(value));
            }
            return exec_body(stmt.body, inner, out);
        }
        case StmtKind::kScope:
            return exec_body(stmt.body, scope, out);
        case StmtKind::kBreak:
            return Flow::kBreak;
        case StmtKind::kContinue:
            return Flow::kContinue;
    }
    return Flow::kNormal;
}

Result<Evaluator::Flow> Evaluator::exec_if(const Stmt& stmt, Scope& scope, std::string& out) {
    for (const IfBranch& branch : stmt.branches) {
        TERN_ASSIGN_OR_RETURN(const Value condition, eval(*branch.condition, scope));
        if (condition.truthy()) return exec_body(branch.body, scope, out);
    }
    return exec_body(stmt.else_body, scope, out);
}

Status Evaluator::bind_targets(const std::vector<std::string>& targets, const Value& value, Scope& scope,
                               SourcePos pos) {
    if (targets.size() == 1) {
        scope.set(targets[0], value);
        return Status::ok();
    }
    Result<List> items = iterate(value);
    if (!items.is_ok()) return at_position(pos, items.status());
    if (items.value().size() != targets.size()) {
        const bool too_many = items.value().size() > targets.size();
        return positioned_error(pos, std::string(too_many ? "too many" : "not enough") + " values to unpack (expected " +
                                         std::to_string(targets.size()) + ", got " +
                                         std::to_string(items.value().size()) + ")");
    }
    for (size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], items.value()[i]);
    return Status::ok();
}

Status Evaluator::exec_set(const Stmt& stmt, Scope& scope, Value value) {
    // Assignments are how values grow across statements; capping depth here keeps every value's nesting (and so
    // the recursion that frees it) bounded.
    if (value.depth() > kMaxValueDepth) return positioned_error(stmt.pos, "value nested too deeply");
    if (stmt.attribute.empty()) return bind_targets(stmt.targets, value, scope, stmt.pos);
    const Value target = lookup(stmt.targets[0], scope);
    if (!target.is_namespace()) {
        return positioned_error(stmt.pos, "cannot assign attribute on non-namespace object '" + stmt.targets[0] + "'");
    }
    if (value.depth() + 1 > kMaxValueDepth) return positioned_error(stmt.pos, "value nested too deeply");
    target.namespace_dict().set(Value::string(stmt.attribute), std::move(value));
    return Status::ok();
}

Value Evaluator::make_loop(const List& items, size_t index) {
    // The keys are made once: a loop builds this dict on every iteration.
    static const std::array<Value, 12> kKeys = {
        Value::string("index"), Value::string("index0"), Value::string("revindex"), Value::string("revindex0"),
        Value::string("first"), Value::string("last"),   Value::string("length"),   Value::string("depth"),
        Value::string("depth0"), Value::string("previtem"), Value::string("nextitem"), Value::string("cycle")};
    const int64_t length = static_cast<int64_t>(items.size());
    const int64_t i = static_cast<int64_t>(index);
    Callable cycle;
    cycle.kind = Callable::Kind::kLoopCycle;
    cycle.name = "cycle";
    cycle.receiver = Value::integer(i);
    const Value values[12] = {
        Value::integer(i + 1),
        Value::integer(i),
        Value::integer(length - i),
        Value::integer(length - i - 1),
        Value::boolean(i == 0),
        Value::boolean(i == length - 1),
        Value::integer(length),
        Value::integer(1),
        Value::integer(0),
        i > 0 ? items[index - 1] : Value::undefined("there is no previous item"),
        i + 1 < length ? items[index + 1] : Value::undefined("there is no next item"),
        Value::callable(std::move(cycle)),
    };
    Dict loop;
    loop.entries.reserve(kKeys.size());
    for (size_t k = 0; k < kKeys.size(); ++k) loop.entries.emplace_back(kKeys[k], values[k]);
    return Value::dict(std::move(loop));
}

Result<Evaluator::Flow> Evaluator::exec_for(const Stmt& stmt, Scope& scope, std::string& out) {
    TERN_ASSIGN_OR_RETURN(const Value iterable, eval(*stmt.expr, scope));
    Result<List> all = iterate(iterable);
    if (!all.is_ok()) return at_position(stmt.expr->pos, all.status());
    List items;
    if (stmt.filter_condition) {
        for (const Value& item : all.value()) {
            if (Status status = budget_.charge_items(1); !status.is_ok()) return at_position(stmt.pos, status);
            Scope probe{&scope, {}};
            TERN_RETURN_IF_ERROR(bind_targets(stmt.targets, item, probe, stmt.pos));
            TERN_ASSIGN_OR_RETURN(const Value keep, eval(*stmt.filter_condition, probe));
            if (keep.truthy()) items.push_back(item);
        }
    } else {
        items = std::move(all).value();
    }
    for (size_t i = 0; i < items.size(); ++i) {
        if (Status status = budget_.charge_items(1); !status.is_ok()) return at_position(stmt.pos, status);
        Scope iteration{&scope, {}};
        TERN_RETURN_IF_ERROR(bind_targets(stmt.targets, items[i], iteration, stmt.pos));
        iteration.set("loop", make_loop(items, i));
        TERN_ASSIGN_OR_RETURN(const Flow flow, exec_body(stmt.body, iteration, out));
        if (flow == Flow::kBreak) break;
    }
    if (items.empty()) {
        Scope otherwise{&scope, {}};
        return exec_body(stmt.else_body, otherwise, out);
    }
    return Flow::kNormal;
}

}  // namespace tern::chat::jinja
