#include "chat/chat_template.h"

#include "chat/json_value.h"

namespace tern::chat {
namespace {

Status with_prefix(const Status& status) { return {status.code(), "chat template: " + status.message()}; }

// A message as Hugging Face passes it: optional keys are absent rather than empty, since templates test
// `'tool_calls' in message` or `message.tool_calls is defined`.
nlohmann::ordered_json message_json(const ChatMessage& message) {
    nlohmann::ordered_json json = {{"role", message.role}, {"content", message.content}};
    if (!message.tool_calls.empty()) {
        nlohmann::ordered_json calls = nlohmann::ordered_json::array();
        for (const ChatToolCall& call : message.tool_calls) {
            calls.push_back({{"id", call.id},
                             {"type", "function"},
                             {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
        }
        json["tool_calls"] = std::move(calls);
    }
    if (!message.tool_call_id.empty()) json["tool_call_id"] = message.tool_call_id;
    if (!message.name.empty()) json["name"] = message.name;
    if (!message.reasoning_content.empty()) json["reasoning_content"] = message.reasoning_content;
    return json;
}

Result<jinja::Value> chat_context(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& options) {
    jinja::List list;
    list.reserve(messages.size());
    for (const ChatMessage& message : messages) {
        if (message.tool_calls.empty() && message.tool_call_id.empty() && message.name.empty() &&
            message.reasoning_content.empty()) {
            jinja::Dict dict;
            dict.entries.emplace_back(jinja::Value::string("role"), jinja::Value::string(message.role));
            dict.entries.emplace_back(jinja::Value::string("content"), jinja::Value::string(message.content));
            list.push_back(jinja::Value::dict(std::move(dict)));
            continue;
        }
        TERN_ASSIGN_OR_RETURN(jinja::Value converted, jinja::value_from_json(message_json(message)));
        list.push_back(std::move(converted));
    }
    jinja::Dict context;
    const auto add = [&](const char* name, jinja::Value value) {
        context.entries.emplace_back(jinja::Value::string(name), std::move(value));
    };
    add("messages", jinja::Value::list(std::move(list)));
    if (options.tools.is_null()) {
        add("tools", jinja::Value::none());
    } else {
        TERN_ASSIGN_OR_RETURN(jinja::Value tools, jinja::value_from_json(options.tools));
        add("tools", std::move(tools));
    }
    add("documents", jinja::Value::none());
    add("add_generation_prompt", jinja::Value::boolean(options.add_generation_prompt));
    add("bos_token", jinja::Value::string(options.bos_token));
    add("eos_token", jinja::Value::string(options.eos_token));
    if (!options.variables.is_object()) return invalid_argument("the extra template variables must be an object");
    for (const auto& [name, value] : options.variables.items()) {
        TERN_ASSIGN_OR_RETURN(jinja::Value converted, jinja::value_from_json(value));
        context.set(jinja::Value::string(name), std::move(converted));
    }
    return jinja::Value::dict(std::move(context));
}

}  // namespace

Result<ChatTemplate> ChatTemplate::parse(const std::string& source) {
    Result<jinja::Template> parsed = jinja::Template::parse(source);
    if (!parsed.is_ok()) return with_prefix(parsed.status());
    return ChatTemplate(std::move(parsed).value());
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                         const ChatTemplateOptions& options) const {
    jinja::RenderOptions render_options;
    render_options.now = options.now;
    TERN_ASSIGN_OR_RETURN(const jinja::Value context, chat_context(messages, options));
    Result<std::string> rendered = template_.render(context, render_options);
    if (!rendered.is_ok()) return with_prefix(rendered.status());
    return rendered;
}

Result<std::string> render_chat(const std::string& template_source, const std::vector<ChatMessage>& messages,
                                const ChatTemplateOptions& options) {
    TERN_ASSIGN_OR_RETURN(const ChatTemplate tmpl, ChatTemplate::parse(template_source));
    return tmpl.render(messages, options);
}

std::string render_fallback(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& options) {
    std::string out;
    for (const ChatMessage& message : messages) {
        out += message.role;
        out += ": ";
        out += message.content;
        out += '\n';
    }
    if (options.add_generation_prompt) out += "assistant:";
    return out;
}

Status validate_template(const std::string& template_source) {
    Result<ChatTemplate> parsed = ChatTemplate::parse(template_source);
    return parsed.is_ok() ? Status::ok() : parsed.status();
}

}  // namespace tern::chat
