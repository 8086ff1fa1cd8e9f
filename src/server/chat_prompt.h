// Chat messages -> prompt text for one model: its GGUF `tokenizer.chat_template`, a template file given with
// --chat-template, or (for models without one, such as stories260K and the synthetic models) chat's plain fallback.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/openai_types.h"
#include "base/status.h"
#include "tools/reasoning.h"
#include "tools/tool_format.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

namespace tern::server {

// Renders a conversation; `template_kwargs` (an object, vLLM's chat_template_kwargs) become extra template variables,
// its add_generation_prompt (a boolean) steering the fallback format too; `tools` (the request's list of tool
// objects, or null) is the template's `tools` variable (the fallback format shows no tools). An error says why the
// render failed.
using ChatRenderer = std::function<Result<std::string>(const std::vector<api::ChatMessage>&,
                                                       const nlohmann::json& template_kwargs,
                                                       const nlohmann::ordered_json& tools)>;

struct ChatPrompt {
    ChatRenderer render;
    std::string source;  // "model", "file PATH" or "fallback"
    // The tool-call format the template renders past calls in; nullopt when it shows none (or is the fallback).
    std::optional<tools::ToolFormat> tool_format;
    // The thinking markers the template handles; nullopt when it handles none.
    std::optional<tools::ReasoningFormat> reasoning;
};

// Fails when the template (the file's or the model's) does not parse; the message names where it came from.
Result<ChatPrompt> make_chat_prompt(const GgufFile& model_file, const Tokenizer& tokenizer,
                                    const std::string& template_path);

}  // namespace tern::server
