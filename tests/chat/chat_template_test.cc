// The chat API: the context render_chat() builds, its errors, validate_template() and the fallback format.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "test_data.h"

namespace tern::chat {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}};

TEST(ChatTemplate, SeesTheVariablesHuggingFacePasses) {
    ChatTemplateOptions options;
    options.bos_token = "<s>";
    options.eos_token = "</s>";
    const Result<std::string> out = render_chat(
        "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ tools is none }}|{{ documents is none }}|"
        "{{ messages | length }}|{{ messages[0].role }}={{ messages[0]['content'] }}|{{ messages[-1] | tojson }}",
        kConversation, options);
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(out.value(), "<s>|</s>|True|True|True|4|system=Be brief.|{\"role\": \"user\", \"content\": \"Bye\"}");
}

// vLLM's chat_template_kwargs: extra variables (Qwen3's enable_thinking and the like), which replace a built-in one
// of the same name; JSON containers become dicts and lists.
TEST(ChatTemplate, ExtraVariablesAreVisibleAndOverride) {
    const std::string source = "{% if enable_thinking is defined and not enable_thinking %}<no-think>{% endif %}"
                               "{{ messages[0].content }}|{{ tags[1] }}|{{ meta.depth }}|{{ bos_token }}";
    ChatTemplateOptions options;
    options.bos_token = "<s>";
    EXPECT_FALSE(render_chat(source, {{"user", "x"}}, options).is_ok()) << "tags is undefined without the variables";
    options.variables = {{"enable_thinking", false}, {"tags", {"a", "b"}}, {"meta", {{"depth", 2}}},
                         {"bos_token", "<BOS>"}};
    const Result<std::string> out = render_chat(source, {{"user", "x"}}, options);
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(out.value(), "<no-think>x|b|2|<BOS>");
}

TEST(ChatTemplate, AddGenerationPromptFollowsTheOption) {
    const std::string source = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
                               "{% if add_generation_prompt %}<assistant>{% endif %}";
    ChatTemplateOptions options;
    options.add_generation_prompt = false;
    EXPECT_EQ(render_chat(source, {{"user", "x"}}, options).value(), "<user>x");
    options.add_generation_prompt = true;
    EXPECT_EQ(render_chat(source, {{"user", "x"}}, options).value(), "<user>x<assistant>");
}

TEST(ChatTemplate, RaisedErrorsCarryTheTemplatesMessageAndPlace) {
    const std::string llama2 = test_data::read_file(test_data::data_path("templates/llama2-chat.jinja"));
    const Result<std::string> out = render_chat(llama2, {{"user", "a"}, {"user", "b"}}, ChatTemplateOptions{});
    ASSERT_FALSE(out.is_ok());
    EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(out.status().message().rfind("chat template: line 1, column ", 0), 0u) << out.status().message();
    EXPECT_NE(out.status().message().find("Conversation roles must alternate user/assistant/user/assistant/..."),
              std::string::npos);
}

TEST(ChatTemplate, ParseErrorsArePrefixedAndPositioned) {
    const Result<std::string> out = render_chat("ok\n{% for m in messages %}", kConversation, ChatTemplateOptions{});
    ASSERT_FALSE(out.is_ok());
    EXPECT_EQ(out.status().message().rfind("chat template: line 2, column ", 0), 0u) << out.status().message();
}

TEST(ChatTemplate, ValidateTemplate) {
    EXPECT_TRUE(validate_template("{% for m in messages %}{{ m.content }}{% endfor %}").is_ok());
    EXPECT_TRUE(validate_template("").is_ok());
    const Status unknown = validate_template("{{ messages | frobnicate }}");
    ASSERT_FALSE(unknown.is_ok());
    EXPECT_NE(unknown.message().find("line 1, column 15: no filter named 'frobnicate'"), std::string::npos)
        << unknown.message();
    EXPECT_FALSE(validate_template("{% if x %}").is_ok());
    EXPECT_FALSE(validate_template("{{ 'unterminated }}").is_ok());
    EXPECT_FALSE(validate_template("{% include 'other.jinja' %}").is_ok());
}

TEST(ChatTemplate, ParsedOnceRendersMany) {
    const Result<ChatTemplate> tmpl = ChatTemplate::parse("{{ messages | map(attribute='content') | join(' / ') }}");
    ASSERT_TRUE(tmpl.is_ok());
    EXPECT_EQ(tmpl.value().render(kConversation, {}).value(), "Be brief. / Hi / Hello. / Bye");
    EXPECT_EQ(tmpl.value().render({}, {}).value(), "");
}

TEST(ChatTemplate, LongConversationsFitTheDefaultLimits) {
    // 2000 messages of 2 KB, 4 MB of text (more than any context window holds), through the templates that do the
    // most work per message.
    std::vector<ChatMessage> messages;
    const std::string content(2000, 'w');
    for (int i = 0; i < 2000; ++i) messages.push_back({i % 2 == 0 ? "user" : "assistant", content});
    for (const char* name : {"llama3.1-instruct", "qwen2.5-instruct", "mistral-instruct-v0.3", "llama2-chat"}) {
        const std::string source = test_data::read_file(test_data::data_path(std::string("templates/") + name + ".jinja"));
        const Result<std::string> out = render_chat(source, messages, ChatTemplateOptions{});
        ASSERT_TRUE(out.is_ok()) << name << ": " << out.status().message();
        EXPECT_GT(out.value().size(), messages.size() * content.size()) << name;
    }
}

TEST(ChatTemplate, FallbackFormat) {
    ChatTemplateOptions options;
    options.bos_token = "<s>";  // never written by the fallback
    EXPECT_EQ(render_fallback(kConversation, options), "system: Be brief.\nuser: Hi\nassistant: Hello.\nuser: Bye\nassistant:");
    options.add_generation_prompt = false;
    EXPECT_EQ(render_fallback({{"user", "multi\nline"}}, options), "user: multi\nline\n");
    EXPECT_EQ(render_fallback({}, options), "");
}

}  // namespace
}  // namespace tern::chat
