// Chat prompts from OpenAI-style messages: a model's tokenizer.chat_template (Jinja2) rendered exactly as Hugging
// Face's apply_chat_template renders it, or a plain fallback format for models that ship no template. Knows nothing
// of tokenizers or HTTP: the caller tokenizes the result (with special-token parsing, and without adding a BOS the
// template already wrote).
//
// How Hugging Face renders (transformers, chat_template_utils.py), and so how render_chat() does:
//   environment: ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, loopcontrols)
//   globals:     raise_exception(message) fails the render; strftime_now(format) formats the current time
//   tojson:      json.dumps(value, ensure_ascii=False, indent=..., separators=..., sort_keys=...)
//   variables:   messages (a list of {"role", "content"} dicts; an assistant's calls under "tool_calls" as
//                {"id", "type": "function", "function": {"name", "arguments"}} with the arguments parsed, since
//                templates write `arguments | tojson`; a tool result's "tool_call_id"; "name" when given),
//                tools (the request's list of tool objects, else None), documents=None, add_generation_prompt,
//                bos_token, eos_token
#pragma once

#include <ctime>
#include <optional>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "chat/template.h"

namespace tern::chat {

// A call an assistant message made, as templates read it back.
struct ChatToolCall {
    std::string id;
    std::string name;
    nlohmann::ordered_json arguments;  // the parsed arguments (an object), in the order they were written
};

struct ChatMessage {
    std::string role;     // "system", "user", "assistant", "tool", or whatever the template accepts
    std::string content;  // plain text ("" for an assistant message that only calls tools, as vLLM passes it)
    std::vector<ChatToolCall> tool_calls;  // assistant: its calls; the key is left out of the message when empty
    std::string tool_call_id;              // tool: the call this result answers; left out when empty
    std::string name;                      // left out when empty
    std::string reasoning_content;         // assistant: a reasoning model's thinking; left out when empty
};

struct ChatTemplateOptions {
    std::string bos_token;               // the model's BOS text, e.g. "<s>" (empty when it has none)
    std::string eos_token;               // the model's EOS text, e.g. "</s>"
    bool add_generation_prompt = true;   // end with the header that starts the assistant's reply
    std::optional<std::tm> now;          // the time strftime_now() sees; unset: the local time
    // The `tools` variable: the request's list of tool objects as sent ({"type": "function", "function": {...}}),
    // or null for None.
    nlohmann::ordered_json tools;
    // Further variables (vLLM's chat_template_kwargs, e.g. enable_thinking), set last: a name here replaces the
    // variable above of that name. An object; a value nested deeper than kMaxValueDepth fails the render.
    nlohmann::ordered_json variables = nlohmann::ordered_json::object();
};

// A parsed chat template, to render many conversations without parsing again. Thread-safe after construction.
class ChatTemplate {
public:
    // Fails on a template this interpreter cannot parse, with the line and column.
    static Result<ChatTemplate> parse(const std::string& source);

    // Fails when the template raises (e.g. "Conversation roles must alternate user/assistant/user/assistant/...")
    // or misbehaves; the message starts with "chat template: line L, column C: ".
    Result<std::string> render(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& options) const;

private:
    explicit ChatTemplate(jinja::Template tmpl) : template_(std::move(tmpl)) {}

    jinja::Template template_;
};

// Parses and renders in one go.
Result<std::string> render_chat(const std::string& template_source, const std::vector<ChatMessage>& messages,
                                const ChatTemplateOptions& options);

// The prompt for a model without a chat template: one line per message, "<role>: <content>\n", then
// "assistant:" when options.add_generation_prompt is set. No BOS / EOS text is written (the tokenizer adds BOS as
// the model's metadata says). For example, system "Be brief." and user "Hi" give
// "system: Be brief.\nuser: Hi\nassistant:".
std::string render_fallback(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& options);

// Whether the template parses (so a server can refuse a model, or fall back, at load time).
Status validate_template(const std::string& template_source);

}  // namespace tern::chat
