// Tool calls as a grammar: the text a model must write to call one of a request's functions (or several, one after
// the other), in the spelling its chat template taught it, with each call's arguments following that function's
// JSON Schema. The spelling comes in as literals (ToolCallSyntax); which model writes which is not known here.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace tern::grammar {

// How calls are spelled. One call's body is always `{"name": "<name>", "<arguments_key>": <arguments>}`, spaced as
// the chat templates render past calls (so a forced call looks like the ones the model saw in its history):
//   calls_begin  call_begin BODY call_end  [ separator call_begin BODY call_end ]...  calls_end
// Empty literals are left out.
struct ToolCallSyntax {
    std::string calls_begin;    // before the first call, e.g. "[TOOL_CALLS] [" (Mistral)
    std::string call_begin;     // before each call, e.g. "<tool_call>\n" (Hermes, Qwen)
    std::string arguments_key;  // "arguments", or "parameters" (Llama 3)
    std::string call_end;       // after each call, e.g. "\n</tool_call>"
    std::string separator;      // between two calls; empty: the format holds one call only
    std::string calls_end;      // after the last call, e.g. "]"
};

// A function that may be called: its name (any UTF-8, spelled as a JSON string) and the JSON Schema of its
// arguments (null: any JSON object). Pass an ordered_json with the request's key order to keep it.
struct ToolSignature {
    std::string name;
    nlohmann::ordered_json parameters;
};

// The GBNF text (start rule "root") of one call of any of `tools` (at least one), or, with `several_calls` and a
// syntax that has a separator, one or more. Rules other than root are named "tool-..." (json_schema_to_gbnf's
// helpers under "tool-<idx>-args-..."). Fails (kInvalidArgument, json_schema_to_gbnf's message) when a schema
// cannot be compiled; `failed_tool_idx`, when given, is then set to that tool's index in `tools`. Thread-safe.
Result<std::string> tool_call_gbnf(const ToolCallSyntax& syntax, const std::vector<ToolSignature>& tools,
                                   bool several_calls, size_t* failed_tool_idx = nullptr);

}  // namespace tern::grammar
