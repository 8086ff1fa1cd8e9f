// What tern serve does with a chat request's tools (api/tools.h): tool_choice "required" or a named function
// becomes a grammar that forces the call, compiled through the server's cache; unless tool_choice is "none", each
// choice's text is parsed for calls in the model's format (tools/tool_call_parser.h). "auto" is parsed, not forced.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "api/tools.h"
#include "grammar/grammar_cache.h"
#include "server/request_parser.h"
#include "server/structured_output.h"
#include "tokenizer/tokenizer.h"
#include "tools/tool_call_parser.h"

namespace tern::server {

// How one request's choices are parsed for calls.
struct ToolParsing {
    tools::ToolFormat format = tools::ToolFormat::kHermes;
    std::vector<std::string> names;  // the functions that may be called
    bool several_calls = true;
    // The format's marker is a control token of this vocabulary ([TOOL_CALLS] for Mistral), which text decoded
    // without special tokens would lose: the choices decode them (vLLM's skip_special_tokens=False for such parsers).
    bool render_special = false;
};

// nullopt when the request's text is not parsed: no tools, or tool_choice "none".
std::optional<ToolParsing> plan_tool_parsing(tools::ToolFormat format, const Tokenizer& tokenizer,
                                             const std::optional<api::ToolRequest>& tools);

// The compiled grammar that forces tool_choice "required" (any tool; several calls when parallel_tool_calls and
// the format allows) or a named function (exactly one call of it); nullptr for "auto" and "none". A schema that
// cannot be compiled is a 400 naming tools[i].function.parameters.
std::variant<std::shared_ptr<const grammar::CompiledGrammar>, RequestError> compile_tool_grammar(
    grammar::GrammarCache& cache, tools::ToolFormat format, const api::ToolRequest& tools,
    const std::optional<ThinkingFirst>& thinking = std::nullopt);

// A parser for one choice's text.
std::unique_ptr<tools::ToolCallParser> make_tool_parser(const ToolParsing& parsing);

}  // namespace tern::server
