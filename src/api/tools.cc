#include "api/tools.h"

#include <fmt/format.h>

#include <algorithm>

namespace tern::api {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

FieldError error_at(std::string param, std::string message) { return FieldError{std::move(message), std::move(param)}; }

bool is_string_or_null(const json& object, const char* key) {
    const auto found = object.find(key);
    return found == object.end() || found->is_null() || found->is_string();
}

// A tool's parameters: absent, or a JSON Schema that describes an object (no "type", or "type": "object").
std::optional<FieldError> check_parameters(const json& function, const std::string& param) {
    const auto parameters = function.find("parameters");
    if (parameters == function.end() || parameters->is_null()) return std::nullopt;
    const auto type = parameters->is_object() ? parameters->find("type") : parameters->end();
    if (!parameters->is_object() || (type != parameters->end() && *type != "object")) {
        return error_at(param, fmt::format("'{}' must be the JSON Schema of an object ({{\"type\": \"object\", "
                                           "\"properties\": {{...}}}}) or be left out: arguments are an object",
                                           param));
    }
    return std::nullopt;
}

std::optional<FieldError> check_tool(const json& tool, size_t tool_idx) {
    const std::string at = fmt::format("tools[{}]", tool_idx);
    if (!tool.is_object()) return error_at(at, fmt::format("'{}' must be an object {{\"type\": \"function\", "
                                                           "\"function\": {{\"name\", \"parameters\"}}}}", at));
    const auto type = tool.find("type");
    if (type != tool.end() && !type->is_null() && *type != "function") {
        return error_at(at + ".type", fmt::format("'{}.type' must be \"function\" (the only kind of tool)", at));
    }
    const auto function = tool.find("function");
    if (function == tool.end() || !function->is_object()) {
        return error_at(at + ".function", fmt::format("'{}.function' must be an object with a 'name'", at));
    }
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
        return error_at(at + ".function.name", fmt::format("'{}.function.name' must be a non-empty string", at));
    }
    if (!is_string_or_null(*function, "description")) {
        return error_at(at + ".function.description", fmt::format("'{}.function.description' must be a string", at));
    }
    const auto strict = function->find("strict");
    if (strict != function->end() && !strict->is_null() && !strict->is_boolean()) {
        return error_at(at + ".function.strict", fmt::format("'{}.function.strict' must be true or false", at));
    }
    return check_parameters(*function, at + ".function.parameters");
}

ToolFunction decode_function(const json& tool) {
    const json& function = tool["function"];
    ToolFunction decoded{.name = function["name"].get<std::string>()};
    if (const json* description = find_field(function, "description")) {
        decoded.description = description->get<std::string>();
    }
    if (const json* parameters = find_field(function, "parameters")) decoded.parameters = ordered_json(*parameters);
    decoded.strict = field_value<bool>(function, "strict").value_or(false);
    return decoded;
}

// tool_choice as a mode, and the function it names; tool_choice's shape was checked.
ToolChoice decode_choice(const json* value, std::string* function_name) {
    if (value == nullptr) return ToolChoice::kAuto;
    if (value->is_object()) {
        *function_name = (*value)["function"]["name"].get<std::string>();
        return ToolChoice::kFunction;
    }
    const std::string mode = value->get<std::string>();
    return mode == "none" ? ToolChoice::kNone : mode == "required" ? ToolChoice::kRequired : ToolChoice::kAuto;
}

std::optional<FieldError> decode_call(const json& call, const std::string& at, MessageToolCall* out) {
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
        return error_at(at, fmt::format("'{}' must be an object {{\"id\", \"type\": \"function\", \"function\": "
                                        "{{\"name\", \"arguments\"}}}}", at));
    }
    if (!is_string_or_null(call, "id")) return error_at(at + ".id", fmt::format("'{}.id' must be a string", at));
    if (const json* id = find_field(call, "id")) out->id = id->get<std::string>();
    const json& function = call["function"];
    const auto name = function.find("name");
    if (name == function.end() || !name->is_string()) {
        return error_at(at + ".function.name", fmt::format("'{}.function.name' must be a string", at));
    }
    out->name = name->get<std::string>();
    const std::string arguments_at = at + ".function.arguments";
    const json* arguments = find_field(function, "arguments");
    if (arguments == nullptr || arguments->is_object()) {  // some clients send the object itself
        out->arguments = arguments == nullptr ? "{}" : arguments->dump();
        return std::nullopt;
    }
    if (!arguments->is_string()) return error_at(arguments_at, fmt::format("'{}' must be a JSON string", arguments_at));
    out->arguments = arguments->get<std::string>();
    if (out->arguments.empty()) out->arguments = "{}";
    if (!json::accept(out->arguments)) {
        return error_at(arguments_at, fmt::format("'{}' must be JSON text (the arguments the call was made with)",
                                                  arguments_at));
    }
    return std::nullopt;
}

}  // namespace

std::optional<FieldError> check_tools_field(const std::string& name, const json& value) {
    if (!value.is_array()) {
        return error_at(name, "'tools' must be a list of {\"type\": \"function\", \"function\"} objects");
    }
    for (size_t tool_idx = 0; tool_idx < value.size(); ++tool_idx) {
        if (auto error = check_tool(value[tool_idx], tool_idx)) return error;
    }
    return std::nullopt;
}

std::optional<FieldError> check_tool_choice_field(const std::string& name, const json& value) {
    const FieldError shape = error_at(name, "'tool_choice' must be \"auto\", \"none\", \"required\" or "
                                            "{\"type\": \"function\", \"function\": {\"name\": ...}}");
    if (value.is_string()) {
        const std::string mode = value.get<std::string>();
        return mode == "auto" || mode == "none" || mode == "required" ? std::nullopt : std::optional(shape);
    }
    if (!value.is_object() || value.value("type", json()) != "function") return shape;
    const auto function = value.find("function");
    if (function == value.end() || !function->is_object() || !function->contains("name") ||
        !(*function)["name"].is_string()) {
        return shape;
    }
    return std::nullopt;
}

std::optional<FieldError> decode_tool_request(const json& body, const std::string& constraint_field,
                                              std::optional<ToolRequest>* out) {
    out->reset();
    ToolRequest request;
    request.choice = decode_choice(find_field(body, "tool_choice"), &request.chosen_function);
    const json* tools = find_field(body, "tools");
    if (tools == nullptr || tools->empty()) {
        if (request.choice == ToolChoice::kRequired || request.choice == ToolChoice::kFunction) {
            return error_at("tool_choice", "'tool_choice' asks for a tool call, but the request has no 'tools'");
        }
        return std::nullopt;
    }
    for (size_t tool_idx = 0; tool_idx < tools->size(); ++tool_idx) {
        ToolFunction function = decode_function((*tools)[tool_idx]);
        const auto same = [&](const ToolFunction& other) { return other.name == function.name; };
        if (std::any_of(request.functions.begin(), request.functions.end(), same)) {
            const std::string at = fmt::format("tools[{}].function.name", tool_idx);
            return error_at(at, fmt::format("'{}': two tools are named '{}'", at, function.name));
        }
        request.functions.push_back(std::move(function));
    }
    const auto chosen = [&](const ToolFunction& function) { return function.name == request.chosen_function; };
    if (request.choice == ToolChoice::kFunction &&
        std::none_of(request.functions.begin(), request.functions.end(), chosen)) {
        return error_at("tool_choice", fmt::format("'tool_choice' names the function '{}', which is not among "
                                                   "'tools'", request.chosen_function));
    }
    if (!constraint_field.empty() && request.choice != ToolChoice::kNone) {
        return error_at(constraint_field, fmt::format("'{}' cannot be combined with 'tools' unless 'tool_choice' is "
                                                      "\"none\": a reply cannot follow a schema and call a tool at "
                                                      "once", constraint_field));
    }
    request.parallel_calls = field_value<bool>(body, "parallel_tool_calls").value_or(true);
    request.as_sent = ordered_json(*tools);
    *out = std::move(request);
    return std::nullopt;
}

void keep_tool_order(const ordered_json& body, ToolRequest& tools) {
    if (!body.is_object() || !body.contains("tools")) return;
    const ordered_json& in_order = body["tools"];
    // Only when it is the same list (the same body read twice); anything else keeps the decoded one.
    if (!in_order.is_array() || json::parse(in_order.dump()) != json::parse(tools.as_sent.dump()) ||
        in_order.size() != tools.functions.size()) {
        return;
    }
    tools.as_sent = in_order;
    for (size_t tool_idx = 0; tool_idx < in_order.size(); ++tool_idx) {
        const ordered_json& function = in_order[tool_idx]["function"];
        const auto parameters = function.find("parameters");
        if (parameters != function.end() && !parameters->is_null()) tools.functions[tool_idx].parameters = *parameters;
    }
}

std::optional<FieldError> decode_message_tool_fields(const json& item, size_t message_idx, ChatMessage* message) {
    const std::string at = fmt::format("messages[{}]", message_idx);
    if (!is_string_or_null(item, "name")) return error_at(at + ".name", fmt::format("'{}.name' must be a string", at));
    if (const json* name = find_field(item, "name")) message->name = name->get<std::string>();
    if (!is_string_or_null(item, "tool_call_id")) {
        return error_at(at + ".tool_call_id", fmt::format("'{}.tool_call_id' must be a string", at));
    }
    if (const json* id = find_field(item, "tool_call_id")) message->tool_call_id = id->get<std::string>();
    if (message->role == "tool" && find_field(item, "tool_call_id") == nullptr) {
        return error_at(at + ".tool_call_id", fmt::format("'{}.tool_call_id' is required in a tool message: the id "
                                                          "of the call it answers", at));
    }
    const json* calls = find_field(item, "tool_calls");
    if (calls == nullptr) return std::nullopt;
    if (message->role != "assistant" || !calls->is_array()) {
        return error_at(at + ".tool_calls", fmt::format("'{}.tool_calls' must be a list, in an assistant message", at));
    }
    for (size_t call_idx = 0; call_idx < calls->size(); ++call_idx) {
        MessageToolCall call;
        if (auto error = decode_call((*calls)[call_idx], fmt::format("{}.tool_calls[{}]", at, call_idx), &call)) {
            return error;
        }
        message->tool_calls.push_back(std::move(call));
    }
    return std::nullopt;
}

}  // namespace tern::api
