// Tool calls parsed out of model text, per format: whole texts against calls written out by hand, and every text
// streamed in random chunkings, whose deltas must add up to exactly the whole text's content and calls.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/tool_call_parser.h"

namespace tern::tools {
namespace {

using nlohmann::json;

struct ExpectedCall {
    std::string name;
    std::string arguments;  // compact JSON text
};

struct Case {
    ToolFormat format;
    std::string text;
    std::string content;
    std::vector<ExpectedCall> calls;
};

// Ids "id0", "id1", ... so that two parsers of one text agree on them.
ParserOptions options_for(ToolFormat format, bool several_calls = true) {
    auto counter = std::make_shared<int>(0);
    return ParserOptions{format, {"get_weather", "get_time"}, several_calls,
                         [counter] { return "id" + std::to_string((*counter)++); }};
}

const std::string kWeather = R"({"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}})";
const std::string kTime = R"({"name": "get_time", "arguments": {"zone": "UTC"}})";
const std::string kWeatherArgs = R"({"city":"Paris","unit":"celsius"})";
const std::string kTimeArgs = R"({"zone":"UTC"})";

std::string hermes(const std::string& call) { return "<tool_call>\n" + call + "\n</tool_call>"; }

std::vector<Case> hermes_cases() {
    const ToolFormat kF = ToolFormat::kHermes;
    return {
        {kF, hermes(kWeather), "", {{"get_weather", kWeatherArgs}}},
        {kF, "Let me check.\n" + hermes(kWeather) + "\n" + hermes(kTime), "Let me check.",
         {{"get_weather", kWeatherArgs}, {"get_time", kTimeArgs}}},
        {kF, hermes(kTime) + "\nDone.", "Done.", {{"get_time", kTimeArgs}}},
        // Qwen sometimes leaves the closing tag out, also between two calls.
        {kF, "<tool_call>\n" + kTime, "", {{"get_time", kTimeArgs}}},
        {kF, "<tool_call>\n" + kTime + "\n" + hermes(kWeather), "",
         {{"get_time", kTimeArgs}, {"get_weather", kWeatherArgs}}},
        // Not calls: an unknown function, a marker in prose, a marker followed by something else.
        {kF, hermes(R"({"name": "launch", "arguments": {}})"), hermes(R"({"name": "launch", "arguments": {}})"), {}},
        {kF, "Wrap calls in <tool_call> tags.", "Wrap calls in <tool_call> tags.", {}},
        {kF, "a <tool_call>[1]</tool_call> b", "a <tool_call>[1]</tool_call> b", {}},
        {kF, "Plain text\nwith lines.\n", "Plain text\nwith lines.\n", {}},
        {kF, "<tool_ca", "<tool_ca", {}},
        // Arguments come compact, strings as written (escapes, braces and spaces inside them kept).
        {kF, hermes(R"({ "name" : "get_weather" , "arguments" : { "city" : "New \"York\" {x} ]", "days" : [1, 2,  3],
            "flag": true, "n": -1.5e3, "none": null } })"),
         "", {{"get_weather", R"({"city":"New \"York\" {x} ]","days":[1,2,3],"flag":true,"n":-1.5e3,"none":null})"}}},
        // Arguments before the name, and a call with no arguments at all.
        {kF, hermes(R"({"arguments": {"zone": "UTC"}, "name": "get_time"})"), "", {{"get_time", kTimeArgs}}},
        {kF, hermes(R"({"name": "get_time"})"), "", {{"get_time", "{}"}}},
        // Cut short (max_tokens): an announced call keeps its arguments as far as they went; one without a name yet
        // is content.
        {kF, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par", "",
         {{"get_weather", R"({"city":"Par)"}}},
        {kF, "<tool_call>\n{\"name\": \"get_wea", "<tool_call>\n{\"name\": \"get_wea", {}},
        {kF, "Hi <tool_call>\n{\"arguments\": {}", "Hi <tool_call>\n{\"arguments\": {}", {}},
    };
}

std::vector<Case> llama_cases() {
    const ToolFormat kF = ToolFormat::kLlama3Json;
    return {
        {kF, R"({"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}})", "",
         {{"get_weather", kWeatherArgs}}},
        {kF, R"(<|python_tag|>{"name": "get_time", "parameters": {"zone": "UTC"}})", "", {{"get_time", kTimeArgs}}},
        {kF, " \n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}", "", {{"get_time", kTimeArgs}}},
        {kF,
         R"({"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}; )"
         R"({"name": "get_time", "parameters": {"zone": "UTC"}})",
         "", {{"get_weather", kWeatherArgs}, {"get_time", kTimeArgs}}},
        {kF, "The weather is fine.", "The weather is fine.", {}},
        {kF, R"({"answer": 42})", R"({"answer": 42})", {}},
        {kF, R"({"name": "Bob", "age": 3})", R"({"name": "Bob", "age": 3})", {}},
        {kF, R"(I think {"name": "get_time", "parameters": {}})", R"(I think {"name": "get_time", "parameters": {}})",
         {}},
        {kF, "<|python", "<|python", {}},
    };
}

std::vector<Case> mistral_cases() {
    const ToolFormat kF = ToolFormat::kMistral;
    return {
        {kF, "[TOOL_CALLS] [" + kWeather + ", " + kTime + "]", "",
         {{"get_weather", kWeatherArgs}, {"get_time", kTimeArgs}}},
        {kF, "[TOOL_CALLS]" + kTime, "", {{"get_time", kTimeArgs}}},
        {kF, "Sure. [TOOL_CALLS] [" + kTime + "]", "Sure.", {{"get_time", kTimeArgs}}},
        {kF, "[TOOL_CALLS] [" + kTime + "] Anything else?", "Anything else?", {{"get_time", kTimeArgs}}},
        {kF, "[TOOL_CALLS]", "[TOOL_CALLS]", {}},
        {kF, "Lists look like [1, 2].", "Lists look like [1, 2].", {}},
        {kF, "[TOOL_CALLS] [" + kTime + ", ", "", {{"get_time", kTimeArgs}}},
    };
}

std::vector<Case> all_cases() {
    std::vector<Case> cases = hermes_cases();
    for (auto more : {llama_cases(), mistral_cases()}) cases.insert(cases.end(), more.begin(), more.end());
    return cases;
}

void expect_calls(const std::vector<ToolCall>& calls, const std::vector<ExpectedCall>& expected,
                  const std::string& text) {
    ASSERT_EQ(calls.size(), expected.size()) << text;
    for (size_t idx = 0; idx < calls.size(); ++idx) {
        EXPECT_EQ(calls[idx].name, expected[idx].name) << text;
        EXPECT_EQ(calls[idx].arguments, expected[idx].arguments) << text;
        EXPECT_EQ(calls[idx].id, "id" + std::to_string(idx)) << text;
    }
}

TEST(ToolCallParser, WholeTextsGiveTheirCallsAndContent) {
    for (const Case& c : all_cases()) {
        SCOPED_TRACE(std::string(format_name(c.format)) + ": " + c.text);
        const ParsedOutput parsed = parse_tool_calls(c.text, options_for(c.format));
        EXPECT_EQ(parsed.content, c.content);
        expect_calls(parsed.calls, c.calls, c.text);
        for (const ToolCall& call : parsed.calls) {
            // A finished call's arguments are JSON (the cut-short case aside).
            if (call.arguments.back() == '}') {
                EXPECT_TRUE(json::accept(call.arguments)) << call.arguments;
            }
        }
    }
}

// The deltas of a stream, put back together as a client does: a call's first delta opens it (id, name, arguments
// ""), later ones carry only argument fragments.
struct Reassembled {
    std::string content;
    std::vector<ToolCall> calls;

    void add(const ParsedDelta& delta) {
        content += delta.content;
        for (const ToolCallDelta& call : delta.calls) {
            if (!call.id.empty()) {
                EXPECT_EQ(call.index, static_cast<int>(calls.size()));
                EXPECT_FALSE(call.name.empty());
                EXPECT_EQ(call.arguments, "");
                calls.push_back({call.id, call.name, ""});
                continue;
            }
            EXPECT_TRUE(call.name.empty());
            EXPECT_FALSE(call.arguments.empty());
            ASSERT_LT(static_cast<size_t>(call.index), calls.size());
            EXPECT_EQ(call.index, static_cast<int>(calls.size()) - 1) << "fragments follow their call's opening";
            calls[static_cast<size_t>(call.index)].arguments += call.arguments;
        }
    }
};

Reassembled stream_in_pieces(const Case& c, const std::vector<size_t>& piece_sizes) {
    ToolCallParser parser(options_for(c.format));
    Reassembled reassembled;
    size_t offset = 0;
    for (size_t size : piece_sizes) {
        if (offset >= c.text.size()) break;
        reassembled.add(parser.push(std::string_view(c.text).substr(offset, size)));
        offset += size;
    }
    if (offset < c.text.size()) reassembled.add(parser.push(std::string_view(c.text).substr(offset)));
    reassembled.add(parser.finish());
    return reassembled;
}

TEST(ToolCallParser, AnyChunkingAddsUpToTheWholeText) {
    std::mt19937 random(7);
    for (const Case& c : all_cases()) {
        SCOPED_TRACE(std::string(format_name(c.format)) + ": " + c.text);
        const ParsedOutput whole = parse_tool_calls(c.text, options_for(c.format));
        std::vector<std::vector<size_t>> chunkings = {std::vector<size_t>(c.text.size(), 1), {c.text.size()}};
        for (int round = 0; round < 60; ++round) {
            std::vector<size_t> sizes;
            for (size_t total = 0; total < c.text.size();) {
                sizes.push_back(std::uniform_int_distribution<size_t>(1, round % 2 == 0 ? 4 : 16)(random));
                total += sizes.back();
            }
            chunkings.push_back(std::move(sizes));
        }
        for (const std::vector<size_t>& sizes : chunkings) {
            const Reassembled streamed = stream_in_pieces(c, sizes);
            ASSERT_EQ(streamed.content, whole.content);
            ASSERT_EQ(streamed.calls.size(), whole.calls.size());
            for (size_t idx = 0; idx < whole.calls.size(); ++idx) {
                EXPECT_EQ(streamed.calls[idx].id, whole.calls[idx].id);
                EXPECT_EQ(streamed.calls[idx].name, whole.calls[idx].name);
                EXPECT_EQ(streamed.calls[idx].arguments, whole.calls[idx].arguments);
            }
        }
    }
}

// Content streams as it comes, and a call is announced as soon as its name ends, before its arguments.
TEST(ToolCallParser, StreamsContentAndCallsEarly) {
    ToolCallParser parser(options_for(ToolFormat::kHermes));
    EXPECT_EQ(parser.push("Checking now").content, "Checking now");
    EXPECT_EQ(parser.push(".\n<tool").content, ".");  // "\n<tool" may open a call
    ParsedDelta opened = parser.push("_call>\n{\"name\": \"get_weather\", \"arguments\": {\"ci");
    EXPECT_EQ(opened.content, "");
    ASSERT_EQ(opened.calls.size(), 2u);
    EXPECT_EQ(opened.calls[0].name, "get_weather");
    EXPECT_EQ(opened.calls[0].arguments, "");
    EXPECT_EQ(opened.calls[1].arguments, "{\"ci");
    ParsedDelta more = parser.push("ty\": \"Oslo\"}}\n</tool_call>");
    ASSERT_EQ(more.calls.size(), 1u);
    EXPECT_EQ(more.calls[0].arguments, "ty\":\"Oslo\"}");
    EXPECT_EQ(parser.finish().content, "");
    ASSERT_EQ(parser.calls().size(), 1u);
    EXPECT_EQ(parser.calls()[0].arguments, R"({"city":"Oslo"})");
}

// A model lost in whitespace (random weights write long runs of it) costs constant work per character: a quadratic
// hold-back would take minutes here.
TEST(ToolCallParser, LongWhitespaceRunsStayCheap) {
    const std::string spaces(300000, ' ');
    for (const Case& c : {Case{ToolFormat::kHermes, spaces + hermes(kTime) + spaces, "", {{"get_time", kTimeArgs}}},
                          Case{ToolFormat::kLlama3Json, spaces + kTime + spaces, "", {{"get_time", kTimeArgs}}},
                          Case{ToolFormat::kMistral, "a" + spaces + "b", "a" + spaces + "b", {}}}) {
        const Reassembled streamed = stream_in_pieces(c, std::vector<size_t>(c.text.size() / 7 + 1, 7));
        EXPECT_EQ(streamed.content, c.content);
        ASSERT_EQ(streamed.calls.size(), c.calls.size());
        if (!c.calls.empty()) {
            EXPECT_EQ(streamed.calls[0].arguments, kTimeArgs);
        }
    }
}

TEST(ToolCallParser, OneCallOnlyDropsTheOthers) {
    const std::string text = "[TOOL_CALLS] [" + kWeather + ", " + kTime + "]";
    const ParsedOutput parsed = parse_tool_calls(text, options_for(ToolFormat::kMistral, /*several_calls=*/false));
    EXPECT_EQ(parsed.content, "");
    expect_calls(parsed.calls, {{"get_weather", kWeatherArgs}}, text);
    const ParsedOutput hermes_one = parse_tool_calls(hermes(kTime) + hermes(kWeather),
                                                     options_for(ToolFormat::kHermes, /*several_calls=*/false));
    EXPECT_EQ(hermes_one.content, "");
    expect_calls(hermes_one.calls, {{"get_time", kTimeArgs}}, "two hermes calls");
}

// Without a list of names any function counts; real ids are OpenAI's shape, Mistral's the 9 characters its
// template accepts back.
TEST(ToolCallParser, AnyNameWithoutAListAndRealIds) {
    const ParsedOutput parsed = parse_tool_calls(hermes(R"({"name": "launch", "arguments": {"n": 1}})"),
                                                 ParserOptions{.format = ToolFormat::kHermes});
    ASSERT_EQ(parsed.calls.size(), 1u);
    EXPECT_EQ(parsed.calls[0].name, "launch");
    EXPECT_EQ(parsed.calls[0].id.rfind("call_", 0), 0u);
    EXPECT_EQ(parsed.calls[0].id.size(), 29u);
    const ParsedOutput mistral = parse_tool_calls("[TOOL_CALLS] [" + kTime + "]",
                                                  ParserOptions{.format = ToolFormat::kMistral});
    ASSERT_EQ(mistral.calls.size(), 1u);
    EXPECT_EQ(mistral.calls[0].id.size(), 9u);
}

}  // namespace
}  // namespace tern::tools
