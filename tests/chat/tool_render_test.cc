// Conversations with tools through the chat API (ChatMessage tool fields, ChatTemplateOptions::tools) must render
// as Jinja2 renders them set up like Hugging Face: golden.json's tool cases (made by scripts/gen-chat-golden from
// the real qwen2.5, llama3.1 and mistral v0.3 templates) hold a tools list, an assistant message that calls a tool
// and the tool's result, with Jinja2's output byte for byte.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "test_data.h"

namespace tern::chat {
namespace {

using nlohmann::ordered_json;
using test_data::data_path;
using test_data::parse_time;
using test_data::read_file;
using test_data::read_json;

const ordered_json& golden_case(const std::string& template_name, const std::string& case_name) {
    static const ordered_json cases = read_json("golden.json")["cases"];
    for (const ordered_json& c : cases) {
        if (c["template"] == template_name && c["name"] == case_name) return c;
    }
    static const ordered_json missing;
    ADD_FAILURE() << "no golden case " << template_name << " / " << case_name;
    return missing;
}

// The messages as a server hands them over: tool calls with their parsed arguments, ids and names.
std::vector<ChatMessage> messages_of(const ordered_json& context) {
    std::vector<ChatMessage> messages;
    for (const ordered_json& item : context["messages"]) {
        ChatMessage message{.role = item["role"].get<std::string>(), .content = item.value("content", "")};
        for (const ordered_json& call : item.value("tool_calls", ordered_json::array())) {
            message.tool_calls.push_back({call.value("id", ""), call["function"]["name"].get<std::string>(),
                                          call["function"]["arguments"]});
        }
        message.tool_call_id = item.value("tool_call_id", "");
        message.name = item.value("name", "");
        messages.push_back(std::move(message));
    }
    return messages;
}

// The case's other variables (tools_in_user_message, date_string) go in as chat_template_kwargs would.
ChatTemplateOptions options_of(const ordered_json& c) {
    const ordered_json& context = c["context"];
    ChatTemplateOptions options{.bos_token = context["bos_token"].get<std::string>(),
                                .eos_token = context["eos_token"].get<std::string>(),
                                .add_generation_prompt = context["add_generation_prompt"].get<bool>(),
                                .now = parse_time(c["now"].get<std::string>()),
                                .tools = context["tools"]};
    for (const auto& [name, value] : context.items()) {
        if (name != "messages" && name != "tools" && name != "documents" && name != "bos_token" &&
            name != "eos_token" && name != "add_generation_prompt") {
            options.variables[name] = value;
        }
    }
    return options;
}

void expect_golden(const std::string& template_name, const std::string& case_name) {
    SCOPED_TRACE(template_name + " / " + case_name);
    const ordered_json& c = golden_case(template_name, case_name);
    ASSERT_TRUE(c.is_object());
    const std::string source = read_file(data_path("templates/" + template_name + ".jinja"));
    const Result<std::string> rendered = render_chat(source, messages_of(c["context"]), options_of(c));
    if (c.contains("error")) {
        ASSERT_FALSE(rendered.is_ok()) << rendered.value();
        EXPECT_NE(rendered.status().message().find(c["error"].get<std::string>()), std::string::npos)
            << rendered.status().message();
        return;
    }
    ASSERT_TRUE(rendered.is_ok()) << rendered.status().message();
    EXPECT_EQ(rendered.value(), c["expected"].get<std::string>());
}

TEST(ToolRender, QwenToolsCallAndResult) {
    expect_golden("qwen2.5-instruct", "tools");
    expect_golden("qwen2.5-instruct", "tools_with_system");
}

TEST(ToolRender, LlamaToolsCallAndResult) {
    expect_golden("llama3.1-instruct", "tools_in_user_message");
    expect_golden("llama3.1-instruct", "tools_in_system");
    expect_golden("llama3.1-instruct", "two_tool_calls");  // the template raises: one call per message
}

TEST(ToolRender, MistralToolsCallAndResult) { expect_golden("mistral-instruct-v0.3", "tools"); }

// The calls' arguments keep the order they were written in, and the tools list its own: the prompt shows what the
// client sent (nlohmann::json would sort the keys).
TEST(ToolRender, KeyOrderIsKept) {
    const std::string source = "{{ tools | tojson }}|{% for m in messages %}{% for c in m.tool_calls %}"
                               "{{ c.function.arguments | tojson }}{% endfor %}{% endfor %}";
    ChatMessage call{.role = "assistant"};
    call.tool_calls.push_back({"call_1", "f", ordered_json::parse(R"({"zeta": 1, "alpha": 2})")});
    ChatTemplateOptions options{.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "f"}}])")};
    const Result<std::string> rendered = render_chat(source, {call}, options);
    ASSERT_TRUE(rendered.is_ok()) << rendered.status().message();
    EXPECT_EQ(rendered.value(), R"([{"type": "function", "function": {"name": "f"}}]|{"zeta": 1, "alpha": 2})");
}

// A message without tool fields has none of their keys, as templates test `'tool_calls' in message`.
TEST(ToolRender, PlainMessagesHaveNoToolKeys) {
    const std::string source = "{% for m in messages %}{{ 'tool_calls' in m }},{{ m.tool_call_id is defined }},"
                               "{{ m.name is defined }};{% endfor %}{{ tools is none }}";
    ChatMessage result{.role = "tool", .content = "21 C", .tool_call_id = "call_1", .name = "weather"};
    const Result<std::string> rendered = render_chat(source, {{"user", "hi"}, result}, ChatTemplateOptions{});
    ASSERT_TRUE(rendered.is_ok()) << rendered.status().message();
    EXPECT_EQ(rendered.value(), "False,False,False;False,True,True;True");
}

}  // namespace
}  // namespace tern::chat
