// Tool calling through tern serve, on the tiny synthetic model (random weights: it has never seen a tool call, so a
// well-formed one is the grammar's doing) with the real Qwen 2.5 chat template, whose Hermes format the server reads
// from it: tool_choice "required" and a named function give calls whose arguments satisfy their function's schema
// (checked here by hand, not with tern's grammar code), a stream adds up to the whole answer, a conversation with
// calls and results in its history is accepted, and bad inputs are 400s naming the parameter.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "serve_process.h"

namespace tern {
namespace {

using json = nlohmann::ordered_json;

// "location" comes before "days" in the schema but not alphabetically: the arguments must keep the schema's order.
const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "The weather in a place",
    "parameters": {"type": "object", "properties": {
      "location": {"type": "string", "maxLength": 20},
      "days": {"type": "integer", "minimum": 1, "maximum": 14}},
     "required": ["location"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "get_time", "description": "The time in a zone",
    "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]}}}
])");

size_t num_code_points(const std::string& text) {
    size_t count = 0;
    for (unsigned char byte : text) count += (byte & 0xC0) != 0x80 ? 1 : 0;
    return count;
}

// What each function's schema asks of its arguments, checked on the parsed text.
void expect_valid_call(const std::string& name, const std::string& arguments_text) {
    SCOPED_TRACE(name + " " + arguments_text);
    const json arguments = json::parse(arguments_text, nullptr, false);
    ASSERT_TRUE(arguments.is_object());
    if (name == "get_time") {
        ASSERT_EQ(arguments.size(), 1u);
        EXPECT_TRUE(arguments["zone"] == "UTC" || arguments["zone"] == "CET");
        return;
    }
    ASSERT_EQ(name, "get_weather");
    ASSERT_TRUE(arguments.contains("location") && arguments["location"].is_string());
    EXPECT_LE(num_code_points(arguments["location"].get<std::string>()), 20u);
    for (const auto& [key, value] : arguments.items()) EXPECT_TRUE(key == "location" || key == "days") << key;
    if (arguments.contains("days")) {
        ASSERT_TRUE(arguments["days"].is_number_integer());
        EXPECT_GE(arguments["days"].get<int64_t>(), 1);
        EXPECT_LE(arguments["days"].get<int64_t>(), 14);
        EXPECT_LT(arguments_text.find("\"location\""), arguments_text.find("\"days\""));
    }
}

struct Call {
    std::string id;
    std::string name;
    std::string arguments;
};

// The calls of a whole response, each checked for OpenAI's shape.
std::vector<Call> calls_of(const json& message) {
    std::vector<Call> calls;
    for (const json& call : message.value("tool_calls", json::array())) {
        EXPECT_EQ(call["type"], "function");
        EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u) << call.dump();
        calls.push_back({call["id"], call["function"]["name"], call["function"]["arguments"]});
    }
    return calls;
}

struct Streamed {
    std::string content;
    std::vector<Call> calls;
    std::string finish_reason;
};

// A stream put back together as OpenAI's clients do, checking the chunks' shape on the way: a call opens with its
// index, id, type, name and empty arguments, then its arguments come in fragments.
Streamed reassemble(const std::vector<std::string>& events) {
    Streamed streamed;
    for (const std::string& event : events) {
        if (event == "[DONE]") continue;
        const json chunk = json::parse(event);
        const json& choice = chunk["choices"][0];
        EXPECT_TRUE(streamed.finish_reason.empty()) << "nothing follows the finish reason";
        if (choice["delta"].contains("content")) streamed.content += choice["delta"]["content"].get<std::string>();
        for (const json& call : choice["delta"].value("tool_calls", json::array())) {
            const size_t index = call["index"].get<size_t>();
            if (call.contains("id")) {
                EXPECT_EQ(index, streamed.calls.size());
                EXPECT_EQ(call["type"], "function");
                EXPECT_EQ(call["function"]["arguments"], "");
                streamed.calls.push_back({call["id"], call["function"]["name"], ""});
                continue;
            }
            EXPECT_FALSE(call["function"].contains("name"));
            if (index < streamed.calls.size()) streamed.calls[index].arguments += call["function"]["arguments"];
        }
        if (choice["finish_reason"].is_string()) streamed.finish_reason = choice["finish_reason"];
    }
    return streamed;
}

class ServeTools : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        server_ = std::make_unique<testing::ServeProcess>();
        // The template's tool prompt takes ~700 of the tiny model's tokens: its 512-token context is stretched.
        ASSERT_EQ(server_->start({"-m", testing::tiny_model_path(), "-t", "2", "--max-model-len", "2048",
                                  "--chat-template", std::string(TERN_TEMPLATE_DIR) + "/qwen2.5-instruct.jinja"}),
                  "");
    }
    static void TearDownTestSuite() {
        if (server_) EXPECT_EQ(server_->stop(), 0) << server_->log();
        server_.reset();
    }
    static json post(const json& body, int expected_status = 200, const std::string& path = "/v1/chat/completions") {
        const testing::HttpReply reply = testing::http_post(server_->port(), path, body.dump());
        EXPECT_EQ(reply.status, expected_status) << body.dump() << ": " << reply.body;
        return json::parse(reply.body, nullptr, false);
    }
    static json request(json fields) {
        if (!fields.contains("messages")) {
            fields["messages"] = json::array({{{"role", "user"}, {"content", "Weather in Oslo, and the time?"}}});
        }
        if (!fields.contains("tools")) fields["tools"] = kTools;
        if (!fields.contains("max_tokens")) fields["max_tokens"] = 400;
        if (!fields.contains("temperature")) fields["temperature"] = 1.0;
        return fields;
    }
    static inline std::unique_ptr<testing::ServeProcess> server_;
};

TEST_F(ServeTools, RequiredGivesCallsThatFollowTheirSchemas) {
    std::set<std::string> names;
    int num_parallel = 0;
    for (int seed = 0; seed < 8; ++seed) {
        const json reply = post(request({{"tool_choice", "required"}, {"seed", seed}}));
        const json& choice = reply["choices"][0];
        ASSERT_EQ(choice["finish_reason"], "tool_calls") << reply.dump();
        EXPECT_TRUE(choice["message"]["content"].is_null()) << reply.dump();
        const std::vector<Call> calls = calls_of(choice["message"]);
        ASSERT_FALSE(calls.empty()) << reply.dump();
        for (const Call& call : calls) {
            expect_valid_call(call.name, call.arguments);
            names.insert(call.name);
        }
        num_parallel += calls.size() > 1 ? 1 : 0;
        std::set<std::string> ids;
        for (const Call& call : calls) ids.insert(call.id);
        EXPECT_EQ(ids.size(), calls.size()) << "ids are unique";
    }
    EXPECT_EQ(names.size(), 2u) << "over eight seeds both functions get called";
    EXPECT_GT(num_parallel, 0) << "parallel_tool_calls defaults to true";
}

TEST_F(ServeTools, OneCallWithoutParallelAndANamedFunction) {
    for (int seed = 0; seed < 6; ++seed) {
        const json single =
            post(request({{"tool_choice", "required"}, {"parallel_tool_calls", false}, {"seed", seed}}));
        ASSERT_EQ(single["choices"][0]["finish_reason"], "tool_calls") << single.dump();
        const std::vector<Call> calls = calls_of(single["choices"][0]["message"]);
        ASSERT_EQ(calls.size(), 1u) << single.dump();
        expect_valid_call(calls[0].name, calls[0].arguments);

        const json named = post(request({{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
                                         {"seed", seed}}));
        ASSERT_EQ(named["choices"][0]["finish_reason"], "tool_calls") << named.dump();
        const std::vector<Call> named_calls = calls_of(named["choices"][0]["message"]);
        ASSERT_EQ(named_calls.size(), 1u) << named.dump();
        EXPECT_EQ(named_calls[0].name, "get_weather");
        expect_valid_call(named_calls[0].name, named_calls[0].arguments);
    }
}

TEST_F(ServeTools, AStreamAddsUpToTheWholeAnswer) {
    for (const json& choice : {json("required"), json("auto")}) {
        for (int seed = 0; seed < 4; ++seed) {
            SCOPED_TRACE(choice.dump() + " seed " + std::to_string(seed));
            json body = request({{"tool_choice", choice}, {"seed", seed}, {"max_tokens", 200}});
            const json whole = post(body);
            body["stream"] = true;
            const testing::StreamReply stream = testing::post_stream(server_->port(), "/v1/chat/completions",
                                                                     body.dump());
            ASSERT_TRUE(stream.done) << stream.body;
            const Streamed streamed = reassemble(stream.events);
            const json& message = whole["choices"][0]["message"];
            EXPECT_EQ(streamed.finish_reason, whole["choices"][0]["finish_reason"]);
            EXPECT_EQ(streamed.content, message["content"].is_null() ? "" : message["content"].get<std::string>());
            const std::vector<Call> calls = calls_of(message);
            ASSERT_EQ(streamed.calls.size(), calls.size()) << whole.dump();
            for (size_t idx = 0; idx < calls.size(); ++idx) {
                EXPECT_EQ(streamed.calls[idx].name, calls[idx].name);
                EXPECT_EQ(streamed.calls[idx].arguments, calls[idx].arguments);
            }
            if (choice == "auto") EXPECT_TRUE(message["content"].is_string()) << "random weights write no call";
        }
    }
}

TEST_F(ServeTools, AConversationWithCallsAndResults) {
    const json question = {{"role", "user"}, {"content", "Weather in Oslo?"}};
    const json call = {{"id", "call_abc"}, {"type", "function"},
                       {"function", {{"name", "get_weather"}, {"arguments", R"({"location": "Oslo", "days": 2})"}}}};
    const json history = {question,
                          {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}},
                          {{"role", "tool"}, {"tool_call_id", "call_abc"}, {"name", "get_weather"},
                           {"content", "{\"sky\": \"clear\", \"celsius\": 21}"}}};
    const json reply = post(request({{"messages", history}, {"tool_choice", "required"}, {"seed", 3}}));
    ASSERT_EQ(reply["choices"][0]["finish_reason"], "tool_calls") << reply.dump();
    for (const Call& made : calls_of(reply["choices"][0]["message"])) expect_valid_call(made.name, made.arguments);
    // The call and its result reach the prompt: it is longer than the question alone by at least their text.
    const json alone = post(request({{"messages", json::array({question})}, {"max_tokens", 1}}));
    EXPECT_GT(reply["usage"]["prompt_tokens"].get<int>(), alone["usage"]["prompt_tokens"].get<int>() + 20)
        << reply.dump() << alone.dump();
    // tool_choice "none": the tools are shown, the text is not parsed, and a schema may constrain it.
    const json none = post(request({{"messages", history}, {"tool_choice", "none"}, {"seed", 3}, {"max_tokens", 40},
                                    {"response_format", {{"type", "json_object"}}}}));
    EXPECT_FALSE(none["choices"][0]["message"].contains("tool_calls")) << none.dump();
    EXPECT_NE(none["choices"][0]["finish_reason"], "tool_calls");
}

TEST_F(ServeTools, BadInputsAre400sNamingTheParameter) {
    const auto refused = [](const json& body, const std::string& param,
                            const std::string& path = "/v1/chat/completions") {
        const json reply = post(body, 400, path);
        EXPECT_EQ(reply["error"]["param"], param) << reply.dump();
        EXPECT_NE(reply["error"]["message"].get<std::string>().find(param), std::string::npos) << reply.dump();
    };
    json tools = kTools;
    tools[0]["function"]["parameters"] = {{"type", "string"}};
    refused(request({{"tools", tools}}), "tools[0].function.parameters");
    tools = kTools;
    tools[1]["function"]["parameters"] = {{"type", "object"},
                                          {"properties", {{"zone", {{"not", {{"type", "null"}}}}}}}};
    refused(request({{"tools", tools}, {"tool_choice", "required"}}), "tools[1].function.parameters");
    refused(request({{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_date"}}}}}}), "tool_choice");
    refused(request({{"tool_choice", "sometimes"}}), "tool_choice");
    refused(request({{"response_format", {{"type", "json_object"}}}}), "response_format");
    refused(request({{"tools", json::array()}, {"tool_choice", "required"}}), "tool_choice");
    const json tool_result = {{"role", "tool"}, {"content", "21 C"}};
    refused(request({{"messages", {{{"role", "user"}, {"content", "hi"}}, tool_result}}}), "messages[1].tool_call_id");
    const json broken_call = {{"role", "assistant"}, {"tool_calls", {{{"id", "c"}, {"type", "function"},
                              {"function", {{"name", "get_time"}, {"arguments", "{\"zone\": "}}}}}}};
    refused(request({{"messages", {{{"role", "user"}, {"content", "hi"}}, broken_call}}}),
            "messages[1].tool_calls[0].function.arguments");
    refused({{"prompt", "hi"}, {"tools", kTools}}, "tools", "/v1/completions");
}

}  // namespace
}  // namespace tern
