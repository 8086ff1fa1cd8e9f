// Tool calling as a request states it (tools, tool_choice, parallel_tool_calls, tool messages): good bodies decoded,
// bad ones refused naming the parameter; the tools' key order recovered from the body's text; the grammar that
// forces a call compiled through the cache; calls in whole and streamed chat responses as OpenAI shapes them.
#include <gtest/gtest.h>

#include <memory>

#include "api/request_fields.h"
#include "api/tools.h"
#include "grammar/matcher.h"
#include "server/request_parser.h"
#include "server/responses.h"
#include "server/tool_calls.h"

namespace tern::server {
namespace {

using nlohmann::json;

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                  "required": ["city"]}}},
  {"type": "function", "function": {"name": "get_time", "strict": true}}
])");

json chat_body(json fields) {
    if (!fields.contains("messages")) fields["messages"] = json::array({{{"role", "user"}, {"content", "hi"}}});
    return fields;
}

CompletionRequest parsed(const json& fields) {
    auto result = parse_completion_request(api::Endpoint::kChatCompletions, chat_body(fields));
    if (auto* error = std::get_if<RequestError>(&result)) ADD_FAILURE() << error->message;
    return std::holds_alternative<CompletionRequest>(result) ? std::get<CompletionRequest>(result) : CompletionRequest{};
}

RequestError refused(const json& fields) {
    auto result = parse_completion_request(api::Endpoint::kChatCompletions, chat_body(fields));
    EXPECT_TRUE(std::holds_alternative<RequestError>(result)) << fields.dump();
    return std::holds_alternative<RequestError>(result) ? std::get<RequestError>(result) : RequestError{};
}

TEST(ToolsRequest, DecodesToolsAndEachChoice) {
    const CompletionRequest plain = parsed({{"tools", kTools}});
    ASSERT_TRUE(plain.tools);
    ASSERT_EQ(plain.tools->functions.size(), 2u);
    EXPECT_EQ(plain.tools->functions[0].name, "get_weather");
    EXPECT_EQ(plain.tools->functions[0].description, "Weather of a city");
    EXPECT_TRUE(plain.tools->functions[1].parameters.is_null());
    EXPECT_TRUE(plain.tools->functions[1].strict);
    EXPECT_EQ(plain.tools->choice, api::ToolChoice::kAuto);
    EXPECT_TRUE(plain.tools->parallel_calls);
    EXPECT_EQ(json::parse(plain.tools->as_sent.dump()), kTools);
    EXPECT_EQ(parsed({{"tools", kTools}, {"tool_choice", "none"}}).tools->choice, api::ToolChoice::kNone);
    EXPECT_EQ(parsed({{"tools", kTools}, {"tool_choice", "required"}}).tools->choice, api::ToolChoice::kRequired);
    const CompletionRequest named = parsed({{"tools", kTools}, {"parallel_tool_calls", false},
                                            {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}});
    EXPECT_EQ(named.tools->choice, api::ToolChoice::kFunction);
    EXPECT_EQ(named.tools->chosen_function, "get_time");
    EXPECT_FALSE(named.tools->parallel_calls);
    // No tools (or an empty list): nothing to call, and "auto" / "none" ask for nothing.
    EXPECT_FALSE(parsed({{"tools", json::array()}, {"tool_choice", "auto"}}).tools);
    EXPECT_FALSE(parsed({{"tool_choice", "none"}}).tools);
    // With tool_choice "none" a structured-output field may come too: the reply is text.
    EXPECT_TRUE(parsed({{"tools", kTools}, {"tool_choice", "none"}, {"response_format", {{"type", "json_object"}}}})
                    .constraint);
}

TEST(ToolsRequest, BadToolsNameTheParameter) {
    const auto param_of = [](const json& fields) { return refused(fields).param; };
    EXPECT_EQ(param_of({{"tools", json::array({{{"name", "f"}}})}}), "tools[0].function");
    EXPECT_EQ(param_of({{"tools", "f"}}), "tools");
    EXPECT_EQ(param_of({{"tools", {5}}}), "tools[0]");
    EXPECT_EQ(param_of({{"tools", {kTools[0], {{"type", "retrieval"}, {"function", {{"name", "g"}}}}}}}),
              "tools[1].type");
    EXPECT_EQ(param_of({{"tools", {{{"type", "function"}, {"function", {{"name", ""}}}}}}}), "tools[0].function.name");
    EXPECT_EQ(param_of({{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"description", 3}}}}}}}),
              "tools[0].function.description");
    for (const json& parameters : {json("object"), json::array(), json{{"type", "string"}}}) {
        const json tool = {{"type", "function"}, {"function", {{"name", "f"}, {"parameters", parameters}}}};
        const RequestError error = refused({{"tools", {kTools[0], tool}}});
        EXPECT_EQ(error.param, "tools[1].function.parameters") << parameters.dump();
        EXPECT_NE(error.message.find("tools[1].function.parameters"), std::string::npos) << error.message;
    }
    EXPECT_EQ(param_of({{"tools", {kTools[0], kTools[0]}}}), "tools[1].function.name");
    EXPECT_EQ(param_of({{"tools", kTools}, {"tool_choice", "always"}}), "tool_choice");
    EXPECT_EQ(param_of({{"tools", kTools}, {"tool_choice", {{"type", "function"}}}}), "tool_choice");
    EXPECT_EQ(param_of({{"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}),
              "tool_choice");
    EXPECT_EQ(param_of({{"tool_choice", "required"}}), "tool_choice");
    EXPECT_EQ(param_of({{"tools", kTools}, {"parallel_tool_calls", 1}}), "parallel_tool_calls");
    const RequestError both = refused({{"tools", kTools}, {"response_format", {{"type", "json_object"}}}});
    EXPECT_EQ(both.param, "response_format");
    EXPECT_NE(both.message.find("tool_choice"), std::string::npos) << both.message;
    EXPECT_EQ(param_of({{"tools", kTools}, {"tool_choice", "required"}, {"guided_regex", "a+"}}), "guided_regex");
}

TEST(ToolsRequest, ToolMessages) {
    const json call = {{"id", "call_1"}, {"type", "function"},
                       {"function", {{"name", "get_weather"}, {"arguments", R"({"city": "Oslo", "days": 2})"}}}};
    const json history = {{{"role", "user"}, {"content", "Weather?"}},
                          {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}},
                          {{"role", "tool"}, {"tool_call_id", "call_1"}, {"name", "get_weather"}, {"content", "21 C"}}};
    const CompletionRequest request = parsed({{"messages", history}, {"tools", kTools}});
    ASSERT_EQ(request.messages.size(), 3u);
    ASSERT_EQ(request.messages[1].tool_calls.size(), 1u);
    EXPECT_EQ(request.messages[1].content, "");
    EXPECT_EQ(request.messages[1].tool_calls[0].id, "call_1");
    EXPECT_EQ(request.messages[1].tool_calls[0].name, "get_weather");
    EXPECT_EQ(request.messages[1].tool_calls[0].arguments, R"({"city": "Oslo", "days": 2})");
    EXPECT_EQ(request.messages[2].tool_call_id, "call_1");
    EXPECT_EQ(request.messages[2].name, "get_weather");

    json bad_arguments = history;
    bad_arguments[1]["tool_calls"][0]["function"]["arguments"] = "{\"city\": ";
    EXPECT_EQ(refused({{"messages", bad_arguments}}).param, "messages[1].tool_calls[0].function.arguments");
    json no_id = history;
    no_id[2].erase("tool_call_id");
    EXPECT_EQ(refused({{"messages", no_id}}).param, "messages[2].tool_call_id");
    json calls_from_user = history;
    calls_from_user[0]["tool_calls"] = {call};
    EXPECT_EQ(refused({{"messages", calls_from_user}}).param, "messages[0].tool_calls");
    json no_name = history;
    no_name[1]["tool_calls"][0]["function"].erase("name");
    EXPECT_EQ(refused({{"messages", no_name}}).param, "messages[1].tool_calls[0].function.name");
}

// The bench's and router's decoder keeps the tool fields, and encodes them so that they decode the same again (the
// request fuzzer's round trip), an empty tool_call_id included.
TEST(ToolsRequest, GenerationRequestsRoundTripToolMessages) {
    const json body = chat_body({{"messages", json::parse(R"([{"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}]},
        {"role": "tool", "tool_call_id": "", "content": "2"}])")}, {"tools", kTools}, {"tool_choice", "auto"}});
    const Result<api::GenerationRequest> decoded = api::parse_generation_request(api::Endpoint::kChatCompletions, body);
    ASSERT_TRUE(decoded.is_ok()) << decoded.status().message();
    ASSERT_EQ(decoded.value().messages[1].tool_calls.size(), 1u);
    EXPECT_EQ(decoded.value().messages[1].tool_calls[0].arguments, R"({"a":1})");
    const json encoded = api::to_json(decoded.value());
    EXPECT_EQ(encoded["tools"], kTools);
    const Result<api::GenerationRequest> again = api::parse_generation_request(api::Endpoint::kChatCompletions, encoded);
    ASSERT_TRUE(again.is_ok()) << again.status().message() << "\n" << encoded.dump();
    EXPECT_EQ(api::to_json(again.value()), encoded);
}

// nlohmann::json sorts keys; the tools go to the template, and their parameters to the grammar, in the body's order.
TEST(ToolsRequest, KeyOrderComesFromTheBody) {
    const std::string body_text = R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function",
        "function": {"name": "f", "parameters": {"type": "object", "properties": {"zeta": {"type": "string"},
        "alpha": {"type": "integer"}}, "required": ["zeta", "alpha"]}}}]})";
    CompletionRequest request = parsed(json::parse(body_text));
    ASSERT_TRUE(request.tools);
    EXPECT_EQ(request.tools->as_sent[0].begin().key(), "function");  // sorted
    api::keep_tool_order(nlohmann::ordered_json::parse(body_text), *request.tools);
    EXPECT_EQ(request.tools->as_sent[0].begin().key(), "type");
    const std::string parameters = request.tools->functions[0].parameters.dump();
    EXPECT_LT(parameters.find("zeta"), parameters.find("alpha")) << parameters;
    // Another body's text changes nothing.
    api::keep_tool_order(nlohmann::ordered_json::parse(R"({"tools": []})"), *request.tools);
    EXPECT_EQ(request.tools->functions.size(), 1u);
}

// A cache over a vocabulary of the 256 single bytes: enough to compile any grammar.
grammar::GrammarCache byte_cache() {
    std::vector<std::string> bytes;
    for (int byte = 0; byte < 256; ++byte) bytes.emplace_back(1, static_cast<char>(byte));
    return grammar::GrammarCache(std::make_shared<const grammar::TokenVocabulary>(std::move(bytes)));
}

TEST(ToolsRequest, ForcedChoicesCompileAGrammar) {
    grammar::GrammarCache cache = byte_cache();
    const auto grammar_of = [&](const json& fields) {
        return compile_tool_grammar(cache, tools::ToolFormat::kHermes, *parsed(fields).tools);
    };
    using Compiled = std::shared_ptr<const grammar::CompiledGrammar>;
    EXPECT_EQ(std::get<Compiled>(grammar_of({{"tools", kTools}})), nullptr);  // auto: parsed, not forced
    const auto required = grammar_of({{"tools", kTools}, {"tool_choice", "required"}});
    ASSERT_TRUE(std::holds_alternative<Compiled>(required));
    ASSERT_NE(std::get<Compiled>(required), nullptr);
    const grammar::Grammar& rules = std::get<Compiled>(required)->grammar();
    EXPECT_TRUE(grammar::matches(rules, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
    const auto named = grammar_of({{"tools", kTools}, {"tool_choice", {{"type", "function"},
                                                                        {"function", {{"name", "get_weather"}}}}}});
    const grammar::Grammar& named_rules = std::get<Compiled>(named)->grammar();
    EXPECT_FALSE(grammar::matches(named_rules, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
    EXPECT_TRUE(grammar::matches(named_rules,
                                 "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"));
    // A schema the compiler refuses names that tool's parameters.
    json tools = kTools;
    tools[1]["function"]["parameters"] = {{"type", "object"}, {"properties", {{"a", {{"not", json::object()}}}}}};
    const auto refused_schema = grammar_of({{"tools", tools}, {"tool_choice", "required"}});
    ASSERT_TRUE(std::holds_alternative<RequestError>(refused_schema));
    EXPECT_EQ(std::get<RequestError>(refused_schema).param, "tools[1].function.parameters");
}

TEST(ToolsRequest, ResponsesCarryTheCalls) {
    const ResponseMeta meta{api::Endpoint::kChatCompletions, "chatcmpl-1", 0, "m", false};
    ChoiceResult result{.index = 0, .finish_reason = "tool_calls"};
    result.tool_calls = {{"call_a", "get_time", "{}"}, {"call_b", "get_weather", R"({"city":"Oslo"})"}};
    const json body = completion_response(meta, {result}, api::Usage{});
    const json& message = body["choices"][0]["message"];
    EXPECT_TRUE(message["content"].is_null());
    EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
    ASSERT_EQ(message["tool_calls"].size(), 2u);
    EXPECT_EQ(message["tool_calls"][1], json::parse(R"({"id": "call_b", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}})"));
    result.text = "Checking.";
    EXPECT_EQ(completion_response(meta, {result}, api::Usage{})["choices"][0]["message"]["content"], "Checking.");
    const json opening = stream_chunk(meta, 0, "", {}, std::nullopt, false, {{0, "call_a", "get_time", ""}});
    EXPECT_EQ(opening["choices"][0]["delta"], json::parse(R"({"tool_calls": [{"index": 0, "id": "call_a",
        "type": "function", "function": {"name": "get_time", "arguments": ""}}]})"));
    const json fragment = stream_chunk(meta, 0, "", {}, "tool_calls", false, {{0, "", "", "{}"}});
    EXPECT_EQ(fragment["choices"][0]["delta"],
              json::parse(R"({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})"));
    EXPECT_EQ(fragment["choices"][0]["finish_reason"], "tool_calls");
}

}  // namespace
}  // namespace tern::server
