// The tool-call format told from real models' chat templates (tests/chat/data/templates), and call ids.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "tools/tool_format.h"

namespace tern::tools {
namespace {

std::string read_template(const std::string& name) {
    std::ifstream in(std::string(TERN_TEMPLATE_DIR) + "/" + name + ".jinja", std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_FALSE(text.str().empty()) << name;
    return text.str();
}

TEST(ToolFormat, DetectedFromRealTemplates) {
    EXPECT_EQ(detect_tool_format(read_template("qwen2.5-instruct")), ToolFormat::kHermes);
    EXPECT_EQ(detect_tool_format(read_template("llama3.1-instruct")), ToolFormat::kLlama3Json);
    EXPECT_EQ(detect_tool_format(read_template("llama3.2-instruct")), ToolFormat::kLlama3Json);
    EXPECT_EQ(detect_tool_format(read_template("mistral-instruct-v0.3")), ToolFormat::kMistral);
    // Templates that render no tool calls.
    for (const char* name : {"chatml", "gemma-it", "llama2-chat", "llama3-instruct", "mistral-instruct-v0.1",
                             "mistral-instruct-v0.2", "phi3-mini", "phi3.5-mini", "qwen2-instruct",
                             "tinyllama-zephyr"}) {
        EXPECT_EQ(detect_tool_format(read_template(name)), std::nullopt) << name;
    }
    EXPECT_EQ(detect_tool_format(""), std::nullopt);
}

TEST(ToolFormat, NamesAndSyntax) {
    EXPECT_EQ(format_name(ToolFormat::kHermes), "hermes");
    EXPECT_EQ(format_name(ToolFormat::kLlama3Json), "llama3_json");
    EXPECT_EQ(format_name(ToolFormat::kMistral), "mistral");
    EXPECT_EQ(call_syntax(ToolFormat::kLlama3Json).arguments_key, "parameters");
    EXPECT_TRUE(call_syntax(ToolFormat::kLlama3Json).separator.empty()) << "Llama 3 templates take one call";
    EXPECT_EQ(call_syntax(ToolFormat::kMistral).calls_begin.rfind(tool_marker(ToolFormat::kMistral), 0), 0u);
    EXPECT_EQ(call_syntax(ToolFormat::kHermes).call_begin.rfind(tool_marker(ToolFormat::kHermes), 0), 0u);
}

TEST(ToolFormat, CallIdsAreFreshAndShaped) {
    std::set<std::string> ids;
    for (int idx = 0; idx < 1000; ++idx) {
        const std::string id = make_call_id(ToolFormat::kHermes);
        ASSERT_EQ(id.size(), 29u);
        ASSERT_EQ(id.rfind("call_", 0), 0u);
        ids.insert(id);
        const std::string mistral = make_call_id(ToolFormat::kMistral);
        ASSERT_EQ(mistral.size(), 9u);
        for (char c : mistral) ASSERT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << mistral;
    }
    EXPECT_EQ(ids.size(), 1000u);
}

}  // namespace
}  // namespace tern::tools
