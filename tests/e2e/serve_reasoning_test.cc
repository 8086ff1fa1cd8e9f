// A reasoning model through tern serve: the tiny synthetic model (random weights) with a ChatML template that
// handles <think> blocks. Its thinking comes back as reasoning_content and its answer as content; a JSON schema
// constrains the answer after the thinking (the thinking itself is free), whether the prompt opened the block,
// closed it (enable_thinking false, through chat_template_kwargs) or left it to the model; a stream reassembles to
// the whole message; a past turn's reasoning_content is accepted.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "serve_process.h"

namespace tern {
namespace {

using json = nlohmann::ordered_json;

const json kAnswerSchema = json::parse(R"({
  "type": "object",
  "properties": {"answer": {"type": "integer", "minimum": 0, "maximum": 99}, "sure": {"type": "boolean"}},
  "required": ["answer", "sure"], "additionalProperties": false
})");

class ServeReasoning : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        server_ = std::make_unique<testing::ServeProcess>();
        ASSERT_EQ(server_->start({"-m", testing::tiny_model_path(), "-t", "2", "--chat-template",
                                  std::string(TERN_TEMPLATE_DIR) + "/thinking-chatml.jinja"}),
                  "");
    }
    static void TearDownTestSuite() {
        if (server_) EXPECT_EQ(server_->stop(), 0) << server_->log();
        server_.reset();
    }
    static json post(const json& body, int expected_status = 200) {
        const testing::HttpReply reply = testing::http_post(server_->port(), "/v1/chat/completions", body.dump());
        EXPECT_EQ(reply.status, expected_status) << body.dump() << ": " << reply.body;
        return json::parse(reply.body, nullptr, false);
    }
    static json request(json fields) {
        fields["messages"] = json::array({{{"role", "user"}, {"content", "What is 6 times 7?"}}});
        return fields;
    }
    static json schema_request(const json& kwargs, uint64_t seed) {
        return request({{"response_format",
                         {{"type", "json_schema"}, {"json_schema", {{"name", "answer"}, {"schema", kAnswerSchema}}}}},
                        {"chat_template_kwargs", kwargs}, {"seed", seed}, {"max_tokens", 96}});
    }
    static inline std::unique_ptr<testing::ServeProcess> server_;
};

void expect_valid_answer(const std::string& content) {
    SCOPED_TRACE(content);
    const json answer = json::parse(content, nullptr, false);
    ASSERT_TRUE(answer.is_object());
    ASSERT_EQ(answer.size(), 2u);
    ASSERT_TRUE(answer["answer"].is_number_integer());
    EXPECT_GE(answer["answer"].get<int64_t>(), 0);
    EXPECT_LE(answer["answer"].get<int64_t>(), 99);
    EXPECT_TRUE(answer["sure"].is_boolean());
}

TEST_F(ServeReasoning, TheSchemaConstrainsTheAnswerAfterTheThinking) {
    int thought = 0;
    for (const json& kwargs : {json{{"open_thinking", true}}, json::object(), json{{"enable_thinking", false}}}) {
        for (uint64_t seed = 1; seed <= 4; ++seed) {
            SCOPED_TRACE(kwargs.dump() + " seed " + std::to_string(seed));
            const json response = post(schema_request(kwargs, seed));
            const json& choice = response["choices"][0];
            EXPECT_EQ(choice["finish_reason"], "stop");
            const json& message = choice["message"];
            expect_valid_answer(message["content"].get<std::string>());
            if (message.contains("reasoning_content")) {
                ++thought;
                EXPECT_EQ(message["reasoning_content"].get<std::string>().find("</think>"), std::string::npos);
            }
            if (kwargs.contains("enable_thinking")) EXPECT_FALSE(message.contains("reasoning_content"));
        }
    }
    EXPECT_GE(thought, 3) << "the opened block's thinking (random text before </think>) is reasoning_content";
}

TEST_F(ServeReasoning, AStreamReassemblesToTheWholeMessage) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
        const json body = schema_request({{"open_thinking", true}}, seed);
        const json whole = post(body)["choices"][0]["message"];
        json streamed_body = body;
        streamed_body["stream"] = true;
        const testing::StreamReply stream =
            testing::post_stream(server_->port(), "/v1/chat/completions", streamed_body.dump());
        ASSERT_TRUE(stream.done) << stream.body;
        std::string reasoning, content;
        for (const std::string& event : stream.events) {
            if (event == "[DONE]") continue;
            const json delta = json::parse(event)["choices"][0]["delta"];
            if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"].get<std::string>();
            if (delta.contains("content")) content += delta["content"].get<std::string>();
        }
        EXPECT_EQ(reasoning, whole.value("reasoning_content", ""));
        EXPECT_EQ(content, whole["content"].get<std::string>());
    }
}

TEST_F(ServeReasoning, WithoutAConstraintAnOpenedBlockIsAllThinkingUntilItCloses) {
    const json response = post(request({{"chat_template_kwargs", {{"open_thinking", true}}}, {"seed", 3},
                                        {"max_tokens", 12}}));
    const json& message = response["choices"][0]["message"];
    ASSERT_TRUE(message.contains("reasoning_content")) << response.dump();
    EXPECT_FALSE(message["reasoning_content"].get<std::string>().empty());
    EXPECT_EQ(message["content"], "");  // twelve random tokens did not close the block
}

TEST_F(ServeReasoning, APastTurnsReasoningContentIsAccepted) {
    json body = request({{"max_tokens", 4}});
    body["messages"] = json::array({{{"role", "user"}, {"content", "6 times 7?"}},
                                    {{"role", "assistant"}, {"content", "42"}, {"reasoning_content", "6*7=42"}},
                                    {{"role", "user"}, {"content", "And 6 times 8?"}}});
    post(body);
    body["messages"][1]["reasoning_content"] = 5;
    const json refused = post(body, 400);
    EXPECT_EQ(refused["error"]["param"], "messages[1].reasoning_content");
}

}  // namespace
}  // namespace tern
