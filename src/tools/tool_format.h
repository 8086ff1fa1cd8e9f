// The text a model writes to call a tool, told from its chat template: the template renders past calls the way the
// model was trained to write new ones. Each format's literals serve both the parser (tool_call_parser.h) and the
// grammar that forces a call (grammar/tool_call_gbnf.h). Knows nothing of requests.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "grammar/tool_call_gbnf.h"

namespace tern::tools {

enum class ToolFormat {
    // Hermes 2 Pro, Qwen 2.5 / 3, and ChatML models taught the same way:
    //   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>   (one such block per call)
    kHermes,
    // Llama 3.1 / 3.2 / 3.3 custom tools: one JSON object, optionally after the <|python_tag|> control token:
    //   {"name": "f", "parameters": {...}}
    kLlama3Json,
    // Mistral v0.3 and later: the [TOOL_CALLS] control token, then a JSON list:
    //   [TOOL_CALLS] [{"name": "f", "arguments": {...}}, ...]
    kMistral,
};

// The format a chat template renders tool calls in; nullopt when it shows none of them (no tool support, or a
// format not known here).
std::optional<ToolFormat> detect_tool_format(std::string_view chat_template);

// "hermes", "llama3_json" or "mistral" (vLLM's --tool-call-parser names).
std::string_view format_name(ToolFormat format);

// The text that opens the calls: "<tool_call>", "<|python_tag|>" (optional for Llama 3, whose calls may also open
// with a bare "{" at the start of the output) or "[TOOL_CALLS]". Markers that are control tokens vanish from text
// decoded without special tokens: tool_marker() tells the caller which token to render.
std::string_view tool_marker(ToolFormat format);

// How a forced call is spelled for grammar::tool_call_gbnf. Llama 3's templates render one call per message
// (they raise on more), so its syntax has no separator; a grammar cannot produce control tokens, so the markers are
// spelled in plain text.
grammar::ToolCallSyntax call_syntax(ToolFormat format);

// A fresh id for a call, unique in practice: "call_" and 24 random letters and digits, as OpenAI's; for Mistral, 9
// letters and digits, the only ids its template accepts back. Thread-safe.
std::string make_call_id(ToolFormat format);

}  // namespace tern::tools
