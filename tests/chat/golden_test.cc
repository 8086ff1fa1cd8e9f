// Real models' chat templates (tests/chat/data/templates) rendered over many conversations must match, byte for
// byte, what Jinja2 set up like Hugging Face's apply_chat_template rendered (tests/chat/data/golden.json, made by
// scripts/gen-chat-golden). Templates that raise must fail with the template's own message.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "chat/json_value.h"
#include "chat/template.h"
#include "test_data.h"

namespace tern::chat {
namespace {

using test_data::data_path;
using test_data::parse_time;
using test_data::read_file;
using test_data::read_json;

const nlohmann::ordered_json& golden() {
    static const nlohmann::ordered_json cases = read_json("golden.json")["cases"];
    return cases;
}

std::vector<std::string> template_names() {
    std::set<std::string> names;
    for (const auto& c : golden()) names.insert(c["template"].get<std::string>());
    return {names.begin(), names.end()};
}

std::vector<ChatMessage> chat_messages(const nlohmann::ordered_json& context) {
    std::vector<ChatMessage> messages;
    for (const auto& m : context["messages"]) messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    return messages;
}

// Compares one outcome with the case: the same text, or a failure that carries Python's error message.
void check(const nlohmann::ordered_json& c, const Result<std::string>& rendered) {
    if (c.contains("expected")) {
        ASSERT_TRUE(rendered.is_ok()) << rendered.status().message();
        EXPECT_EQ(rendered.value(), c["expected"].get<std::string>());
    } else {
        ASSERT_FALSE(rendered.is_ok()) << "rendered instead of failing: " << rendered.value();
        EXPECT_NE(rendered.status().message().find(c["error"].get<std::string>()), std::string::npos)
            << rendered.status().message();
    }
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, RendersLikeHuggingFace) {
    const std::string source = read_file(data_path("templates/" + GetParam() + ".jinja"));
    ASSERT_FALSE(source.empty());
    ASSERT_TRUE(validate_template(source).is_ok()) << validate_template(source).message();
    Result<jinja::Template> parsed = jinja::Template::parse(source);
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    Result<ChatTemplate> chat = ChatTemplate::parse(source);
    ASSERT_TRUE(chat.is_ok());
    int cases = 0;
    for (const auto& c : golden()) {
        if (c["template"] != GetParam()) continue;
        ++cases;
        SCOPED_TRACE(c["name"].get<std::string>());
        jinja::RenderOptions options;
        options.now = parse_time(c["now"].get<std::string>());
        Result<jinja::Value> context = jinja::value_from_json(c["context"]);
        ASSERT_TRUE(context.is_ok());
        check(c, parsed.value().render(context.value(), options));
        if (!c["chat"].get<bool>()) continue;
        // The same conversation through the chat API, which builds the context itself.
        ChatTemplateOptions chat_options;
        chat_options.bos_token = c["context"]["bos_token"].get<std::string>();
        chat_options.eos_token = c["context"]["eos_token"].get<std::string>();
        chat_options.add_generation_prompt = c["context"]["add_generation_prompt"].get<bool>();
        chat_options.now = options.now;
        const std::vector<ChatMessage> messages = chat_messages(c["context"]);
        check(c, chat.value().render(messages, chat_options));
        check(c, render_chat(source, messages, chat_options));
    }
    EXPECT_GE(cases, 16);
}

INSTANTIATE_TEST_SUITE_P(Templates, GoldenTest, ::testing::ValuesIn(template_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             std::string name = info.param;
                             std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                             return name;
                         });

TEST(GoldenData, CoversTheModelFamilies) {
    const std::vector<std::string> names = template_names();
    for (const char* family : {"llama2-chat", "llama3-instruct", "llama3.1-instruct", "llama3.2-instruct",
                               "qwen2-instruct", "qwen2.5-instruct", "mistral-instruct-v0.1", "mistral-instruct-v0.2",
                               "mistral-instruct-v0.3", "tinyllama-zephyr", "phi3-mini", "phi3.5-mini", "gemma-it"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), family), names.end()) << family;
    }
    int errors = 0;
    for (const auto& c : golden()) errors += c.contains("error") ? 1 : 0;
    EXPECT_GE(errors, 10);  // role-order and system-role violations, bad tool calls
    EXPECT_GE(golden().size(), 200u);
}

}  // namespace
}  // namespace tern::chat
