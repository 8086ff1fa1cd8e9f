// OpenAI tool calling as a chat request states it: `tools` (the functions a model may call, each with a JSON Schema
// of its arguments), `tool_choice` ("auto", "none", "required" or one named function), `parallel_tool_calls`, and
// the tool fields of messages (an assistant's `tool_calls`, a tool result's `tool_call_id`). Only the request's
// words are decoded here; how calls are spelled, forced or parsed is the tools and grammar modules' business.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/openai_types.h"
#include "api/request_fields.h"

namespace tern::api {

struct ToolFunction {
    std::string name;
    std::string description;
    // The arguments' JSON Schema, an object schema, or null when the tool gave none (any object). Its keys are in
    // the body's order once keep_tool_order() ran (nlohmann::json sorts them), else alphabetical.
    nlohmann::ordered_json parameters;
    bool strict = false;  // accepted; tern enforces a schema whenever it forces a call, never otherwise
};

enum class ToolChoice {
    kAuto,      // the model may answer or call; its text is parsed for calls
    kNone,      // the model answers in text; the tools are still shown to it (vLLM's default)
    kRequired,  // one call or more (parallel_tool_calls) of any tool, forced by a grammar
    kFunction,  // exactly one call of `ToolRequest::chosen_function`, forced by a grammar
};

struct ToolRequest {
    std::vector<ToolFunction> functions;
    // The `tools` list as sent, for the chat template (the body's key order after keep_tool_order()).
    nlohmann::ordered_json as_sent = nlohmann::ordered_json::array();
    ToolChoice choice = ToolChoice::kAuto;
    std::string chosen_function;    // kFunction
    bool parallel_calls = true;     // parallel_tool_calls
};

// Checks the shape of `tools` and `tool_choice` (field rules of request_fields.cc). Errors name the parameter at
// fault, e.g. "tools[1].function.parameters".
std::optional<FieldError> check_tools_field(const std::string& name, const nlohmann::json& value);
std::optional<FieldError> check_tool_choice_field(const std::string& name, const nlohmann::json& value);

// The tool request of a body whose fields passed their checks; nullopt when it has no tools (absent or an empty
// list). Refused: a tool_choice of "required" or a function without tools, a function name that is not among the
// tools, two tools of one name, and `constraint_field` (a structured-output field the body also sets; empty: none)
// unless tool_choice is "none": a text cannot follow a schema and be a call at once.
std::optional<FieldError> decode_tool_request(const nlohmann::json& body, const std::string& constraint_field,
                                              std::optional<ToolRequest>* out);

// Takes the tools from the body read with its key order (`ordered_body`), keeping the key order of each tool (for
// the template) and of its parameters (for the grammar), when it is the same list.
void keep_tool_order(const nlohmann::ordered_json& ordered_body, ToolRequest& tools);

// The tool fields of chat message `message_idx`: `tool_calls` (assistant), `tool_call_id` (tool, required there)
// and `name`. Errors name the field, e.g. "messages[2].tool_calls[0].function.arguments".
std::optional<FieldError> decode_message_tool_fields(const nlohmann::json& item, size_t message_idx,
                                                     ChatMessage* message);

}  // namespace tern::api
