#include "grammar/tool_call_gbnf.h"

#include <fmt/format.h>

#include "grammar/gbnf.h"
#include "grammar/json_schema_to_gbnf.h"

namespace tern::grammar {
namespace {

using nlohmann::ordered_json;

// Arguments are always an object: a schema that says no type (`{}`, or only a description) gets "type": "object",
// placed first so that the rest keeps its order.
ordered_json arguments_schema(const ordered_json& parameters) {
    if (parameters.is_null()) return ordered_json{{"type", "object"}};
    if (!parameters.is_object() || parameters.contains("type")) return parameters;
    ordered_json with_type = {{"type", "object"}};
    for (const auto& [key, value] : parameters.items()) with_type[key] = value;
    return with_type;
}

// `literal` followed by a space, or nothing for an empty one.
std::string spelled(const std::string& literal) {
    return literal.empty() ? std::string() : gbnf_literal(literal) + " ";
}

// tool-<idx> ::= "{\"name\": \"<name>\", \"<key>\": " tool-<idx>-args "}", plus the argument rules.
Result<std::string> function_rules(const ToolCallSyntax& syntax, const ToolSignature& tool, size_t tool_idx) {
    const std::string rule = fmt::format("tool-{}", tool_idx);
    TERN_ASSIGN_OR_RETURN(std::string arguments,
                          json_schema_to_gbnf(arguments_schema(tool.parameters), rule + "-args"));
    // The name as a JSON string (nlohmann escapes what JSON must), then the whole head as one GBNF literal.
    const std::string head = fmt::format("{{\"name\": {}, {}: ", ordered_json(tool.name).dump(),
                                         ordered_json(syntax.arguments_key).dump());
    return fmt::format("{} ::= {} {}-args {}\n{}", rule, gbnf_literal(head), rule, gbnf_literal("}"), arguments);
}

}  // namespace

Result<std::string> tool_call_gbnf(const ToolCallSyntax& syntax, const std::vector<ToolSignature>& tools,
                                   bool several_calls, size_t* failed_tool_idx) {
    if (tools.empty()) return invalid_argument("a tool-call grammar needs at least one tool");
    std::string alternatives;
    std::string rules;
    for (size_t tool_idx = 0; tool_idx < tools.size(); ++tool_idx) {
        Result<std::string> function = function_rules(syntax, tools[tool_idx], tool_idx);
        if (!function.is_ok()) {
            if (failed_tool_idx != nullptr) *failed_tool_idx = tool_idx;
            return function.status();
        }
        alternatives += fmt::format("{}tool-{}", tool_idx == 0 ? "" : " | ", tool_idx);
        rules += function.value();
        if (!rules.empty() && rules.back() != '\n') rules += '\n';
    }
    const std::string one_call = fmt::format("tool-call ::= {}( {} ) {}\n", spelled(syntax.call_begin), alternatives,
                                             spelled(syntax.call_end));
    const bool repeat = several_calls && !syntax.separator.empty();
    const std::string calls = repeat ? fmt::format("tool-call ( {}tool-call )*", spelled(syntax.separator))
                                     : std::string("tool-call");
    return fmt::format("root ::= {}{} {}\n{}{}", spelled(syntax.calls_begin), calls, spelled(syntax.calls_end),
                       one_call, rules);
}

}  // namespace tern::grammar
