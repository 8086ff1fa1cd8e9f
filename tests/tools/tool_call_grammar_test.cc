// The grammar that forces tool calls (grammar/tool_call_gbnf.h), in each format's spelling: it accepts calls as the
// real templates render them (the strings are golden.json's Jinja2 renderings of past calls), refuses unknown
// functions, arguments against their schema and extra calls, and what it accepts parses back into those calls.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/tool_call_gbnf.h"
#include "tools/tool_call_parser.h"
#include "tools/tool_format.h"

namespace tern::tools {
namespace {

using nlohmann::ordered_json;

const std::vector<grammar::ToolSignature> kTools = {
    {"get_weather", ordered_json::parse(R"({"type": "object", "properties": {"city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]})")},
    {"get_time", ordered_json::parse(R"({"properties": {"zone": {"type": "string", "maxLength": 8}},
        "required": ["zone"]})")},  // no "type": arguments are an object all the same
    {"ping", nullptr},                 // no parameters: any object
};

grammar::Grammar compile(ToolFormat format, const std::vector<grammar::ToolSignature>& tools, bool several) {
    const Result<std::string> text = grammar::tool_call_gbnf(call_syntax(format), tools, several);
    EXPECT_TRUE(text.is_ok()) << text.status().message();
    Result<grammar::Grammar> parsed = grammar::parse_gbnf(text.is_ok() ? text.value() : "root ::= \"x\"");
    EXPECT_TRUE(parsed.is_ok()) << parsed.status().message() << "\n" << text.value();
    return std::move(parsed).value();
}

void expect_language(ToolFormat format, bool several, const std::vector<std::string>& accepted,
                     const std::vector<std::string>& rejected) {
    const grammar::Grammar grammar = compile(format, kTools, several);
    for (const std::string& text : accepted) {
        EXPECT_TRUE(grammar::matches(grammar, text)) << "should accept: " << text;
        // What the grammar lets through is what the parser reads back as calls, with nothing left as content.
        const ParsedOutput parsed = parse_tool_calls(text, ParserOptions{format, {"get_weather", "get_time", "ping"}});
        EXPECT_FALSE(parsed.calls.empty()) << text;
        EXPECT_EQ(parsed.content, "") << text;
    }
    for (const std::string& text : rejected) EXPECT_FALSE(grammar::matches(grammar, text)) << "should reject: " << text;
}

const std::string kQwenCall =  // qwen2.5-instruct renders a past call so
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>";

TEST(ToolCallGrammar, HermesCalls) {
    const std::string time = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}\n</tool_call>";
    const std::string ping = "<tool_call>\n{\"name\": \"ping\", \"arguments\": {\"any\": [1, {\"x\": null}]}}\n</tool_call>";
    expect_language(ToolFormat::kHermes, /*several=*/false, {kQwenCall, time, ping},
                    {"", kQwenCall + "\n" + time, "Sure. " + kQwenCall,
                     "<tool_call>\n{\"name\": \"get_date\", \"arguments\": {}}\n</tool_call>",
                     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"celsius\"}}\n</tool_call>",
                     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"K\"}}\n"
                     "</tool_call>",
                     "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"Europe/Paris\"}}\n</tool_call>",
                     "<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"UTC\"}\n</tool_call>",
                     "<tool_call>\n{\"name\": \"ping\", \"arguments\": 5}\n</tool_call>"});
    expect_language(ToolFormat::kHermes, /*several=*/true, {kQwenCall, kQwenCall + "\n" + time + "\n" + ping},
                    {kQwenCall + time, kQwenCall + "\n"});
}

TEST(ToolCallGrammar, LlamaTakesOneCall) {
    // As llama3.1-instruct renders a past call.
    const std::string call = R"({"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}})";
    expect_language(ToolFormat::kLlama3Json, /*several=*/true,
                    {call, R"({"name": "get_time", "parameters": {"zone": "UTC"}})"},
                    {call + "; " + call, R"({"name": "get_weather", "arguments": {"city": "Paris"}})",
                     "<|python_tag|>" + call});
}

TEST(ToolCallGrammar, MistralList) {
    const std::string weather = R"({"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}})";
    const std::string time = R"({"name": "get_time", "arguments": {"zone": "UTC"}})";
    expect_language(ToolFormat::kMistral, /*several=*/true,
                    {"[TOOL_CALLS] [" + weather + "]", "[TOOL_CALLS] [" + weather + ", " + time + "]"},
                    {"[TOOL_CALLS] []", "[TOOL_CALLS] " + weather, "[TOOL_CALLS] [" + weather + ", ]"});
    expect_language(ToolFormat::kMistral, /*several=*/false, {"[TOOL_CALLS] [" + time + "]"},
                    {"[TOOL_CALLS] [" + weather + ", " + time + "]"});
}

// One named function (tool_choice {"type": "function", ...}): the grammar of that tool alone.
TEST(ToolCallGrammar, NamedFunctionAndUnusualNames) {
    const std::vector<grammar::ToolSignature> named = {{"say \"hi\" \\ é", nullptr}};
    const grammar::Grammar grammar = compile(ToolFormat::kHermes, named, false);
    EXPECT_TRUE(grammar::matches(grammar,
                                 "<tool_call>\n{\"name\": \"say \\\"hi\\\" \\\\ é\", \"arguments\": {}}\n</tool_call>"));
    EXPECT_FALSE(grammar::matches(grammar, kQwenCall));
}

TEST(ToolCallGrammar, SchemaErrorsNameTheTool) {
    std::vector<grammar::ToolSignature> tools = kTools;
    tools.push_back({"bad", ordered_json::parse(R"({"type": "object", "properties": {"a": {"not": {}}}})")});
    size_t failed = 99;
    const Result<std::string> text = grammar::tool_call_gbnf(call_syntax(ToolFormat::kHermes), tools, true, &failed);
    ASSERT_FALSE(text.is_ok());
    EXPECT_EQ(failed, 3u);
    EXPECT_NE(text.status().message().find("not"), std::string::npos) << text.status().message();
    EXPECT_FALSE(grammar::tool_call_gbnf(call_syntax(ToolFormat::kHermes), {}, true).is_ok());
}

}  // namespace
}  // namespace tern::tools
