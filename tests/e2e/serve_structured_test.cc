// Structured output through tern serve, on the tiny synthetic model (random weights: it knows nothing of JSON, so
// every valid answer is the grammar's doing): each spelling clients use (OpenAI's response_format, vLLM's guided_*
// and structured_outputs, llama-server's json_schema and grammar) constrains the text, checked here by independent
// means (nlohmann's parser, PCRE2); a stream reassembles to the whole answer; max_tokens inside a value is "length";
// bad constraints are 400s naming the field.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "serve_process.h"

namespace tern {
namespace {

// ordered_json: the schema goes out with its keys in the written order, which the answer must follow.
using json = nlohmann::ordered_json;

const json kPersonSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "role": {"enum": ["admin", "user", "guest"]},
    "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{1,6}$"}, "maxItems": 3}
  },
  "required": ["name", "age", "role"],
  "additionalProperties": false
})");

bool full_match(const std::string& pattern, const std::string& text) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), PCRE2_ZERO_TERMINATED,
                                     PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED, &error, &offset, nullptr);
    if (code == nullptr) return false;
    pcre2_match_data* data = pcre2_match_data_create_from_pattern(code, nullptr);
    const int matched = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0, data, nullptr);
    pcre2_match_data_free(data);
    pcre2_code_free(code);
    return matched >= 0;
}

// What the person schema asks, checked on the parsed answer (not with tern's own grammar code).
void expect_person(const std::string& content) {
    const json person = json::parse(content, nullptr, false);
    ASSERT_TRUE(person.is_object()) << content;
    ASSERT_TRUE(person.contains("name") && person["name"].is_string()) << content;
    EXPECT_LE(person["name"].get<std::string>().size(), 12u * 4) << content;  // 12 characters, up to 4 bytes each
    ASSERT_TRUE(person.contains("age") && person["age"].is_number_integer()) << content;
    EXPECT_GE(person["age"].get<int64_t>(), 0);
    EXPECT_LE(person["age"].get<int64_t>(), 120);
    ASSERT_TRUE(person.contains("role")) << content;
    EXPECT_TRUE(person["role"] == "admin" || person["role"] == "user" || person["role"] == "guest") << content;
    for (const auto& [key, value] : person.items()) {
        EXPECT_TRUE(key == "name" || key == "age" || key == "role" || key == "tags") << content;
    }
    if (person.contains("tags")) {
        ASSERT_TRUE(person["tags"].is_array());
        EXPECT_LE(person["tags"].size(), 3u);
        for (const json& tag : person["tags"]) EXPECT_TRUE(full_match("[a-z]{1,6}", tag.get<std::string>())) << content;
    }
    // Properties come in the schema's order (the body's, not nlohmann's sorted one).
    EXPECT_LT(content.find("\"name\""), content.find("\"age\""));
    EXPECT_LT(content.find("\"age\""), content.find("\"role\""));
}

class ServeStructured : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        server_ = std::make_unique<testing::ServeProcess>();
        ASSERT_EQ(server_->start({"-m", testing::tiny_model_path(), "-t", "2"}), "");
    }
    static void TearDownTestSuite() {
        if (server_) EXPECT_EQ(server_->stop(), 0) << server_->log();
        server_.reset();
    }
    static json post(const json& body, const std::string& path, int expected_status = 200) {
        const testing::HttpReply reply = testing::http_post(server_->port(), path, body.dump());
        EXPECT_EQ(reply.status, expected_status) << body.dump() << ": " << reply.body;
        return json::parse(reply.body, nullptr, false);
    }
    static json chat(json fields) {
        fields["messages"] = json::array({{{"role", "user"}, {"content", "Who are you?"}}});
        if (!fields.contains("max_tokens")) fields["max_tokens"] = 300;
        return post(fields, "/v1/chat/completions");
    }
    static json complete(json fields, int expected_status = 200) {
        fields["prompt"] = "Once upon a time";
        if (!fields.contains("max_tokens")) fields["max_tokens"] = 100;
        return post(fields, "/v1/completions", expected_status);
    }
    static inline std::unique_ptr<testing::ServeProcess> server_;
};

TEST_F(ServeStructured, ResponseFormatJsonSchemaGivesValidObjects) {
    for (int seed = 0; seed < 6; ++seed) {
        const json reply = chat({{"seed", seed},
                                 {"temperature", 1.0},
                                 {"response_format",
                                  {{"type", "json_schema"},
                                   {"json_schema", {{"name", "person"}, {"schema", kPersonSchema}, {"strict", true}}}}}});
        ASSERT_EQ(reply["choices"][0]["finish_reason"], "stop") << reply.dump();
        expect_person(reply["choices"][0]["message"]["content"].get<std::string>());
    }
}

TEST_F(ServeStructured, EverySpellingOfASchemaConstrains) {
    const std::vector<json> spellings = {
        {{"guided_json", kPersonSchema}},
        {{"guided_json", kPersonSchema.dump()}},
        {{"structured_outputs", {{"json", kPersonSchema}}}},
        {{"json_schema", kPersonSchema}},
        {{"response_format", {{"type", "json_object"}, {"schema", kPersonSchema}}}},
    };
    for (const json& spelling : spellings) {
        json fields = spelling;
        fields["seed"] = 3;
        const json reply = complete(fields);
        ASSERT_EQ(reply["choices"][0]["finish_reason"], "stop") << spelling.dump() << reply.dump();
        expect_person(reply["choices"][0]["text"].get<std::string>());
    }
}

TEST_F(ServeStructured, JsonObjectRegexChoiceAndGrammar) {
    // Free strings and arrays: the random model wanders, the budget steering brings it home within max_tokens.
    for (int max_tokens : {40, 200}) {
        const json object = chat({{"seed", 1}, {"max_tokens", max_tokens}, {"response_format", {{"type", "json_object"}}}});
        EXPECT_EQ(object["choices"][0]["finish_reason"], "stop") << object.dump();
        EXPECT_TRUE(json::parse(object["choices"][0]["message"]["content"].get<std::string>(), nullptr, false).is_object())
            << object.dump();
    }
    const std::string pattern = "[A-Z]{3}-[0-9]{2,4}( \\(x\\))?";
    for (const json& spelling : {json{{"guided_regex", pattern}}, json{{"structured_outputs", {{"regex", pattern}}}}}) {
        const json reply = complete(spelling);
        EXPECT_TRUE(full_match(pattern, reply["choices"][0]["text"].get<std::string>())) << reply.dump();
    }
    const std::vector<std::string> choices = {"yes", "no", "it says \"maybe\""};
    for (int seed = 0; seed < 5; ++seed) {
        const json reply = complete({{"guided_choice", choices}, {"seed", seed}});
        const std::string text = reply["choices"][0]["text"].get<std::string>();
        EXPECT_NE(std::find(choices.begin(), choices.end(), text), choices.end()) << text;
    }
    const std::string gbnf = "root ::= \"(\" [a-c]+ (\",\" [a-c]+){0,3} \")\"";
    for (const json& spelling : {json{{"grammar", gbnf}}, json{{"guided_grammar", gbnf}}}) {
        const json reply = complete(spelling);
        EXPECT_TRUE(full_match("\\([a-c]+(,[a-c]+){0,3}\\)", reply["choices"][0]["text"].get<std::string>()))
            << reply.dump();
    }
}

TEST_F(ServeStructured, AStreamReassemblesToTheWholeAnswer) {
    json body = {{"prompt", "Once upon a time"}, {"max_tokens", 200}, {"seed", 7}, {"guided_json", kPersonSchema}};
    const json whole = post(body, "/v1/completions");
    body["stream"] = true;
    const testing::StreamReply stream = testing::post_stream(server_->port(), "/v1/completions", body.dump());
    ASSERT_TRUE(stream.done) << stream.body;
    std::string text;
    for (const std::string& event : stream.events) {
        if (event == "[DONE]") continue;
        const json chunk = json::parse(event);
        text += chunk["choices"][0].value("text", "");
    }
    EXPECT_EQ(text, whole["choices"][0]["text"].get<std::string>());
}

TEST_F(ServeStructured, MaxTokensInsideAValueEndsWithLengthAndAPrefix) {
    const json reply = complete({{"guided_json", kPersonSchema}, {"max_tokens", 5}, {"seed", 2}});
    EXPECT_EQ(reply["choices"][0]["finish_reason"], "length");
    const std::string text = reply["choices"][0]["text"].get<std::string>();
    EXPECT_EQ(text.rfind("{", 0), 0u) << text;  // the start of an object, cut short
}

TEST_F(ServeStructured, ChoicesAndLogitBiasStayInsideTheGrammar) {
    // n choices each follow the schema; a bias for a token the grammar refuses does not bring it in.
    const json reply = complete({{"guided_choice", json::array({"alpha", "beta"})}, {"n", 4}, {"seed", 5},
                                 {"logit_bias", {{"0", 100}, {"5", 100}, {"100", 100}}}});
    ASSERT_EQ(reply["choices"].size(), 4u);
    for (const json& choice : reply["choices"]) {
        EXPECT_TRUE(choice["text"] == "alpha" || choice["text"] == "beta") << choice.dump();
    }
}

TEST_F(ServeStructured, BadConstraintsAre400sNamingTheField) {
    const auto refused = [](const json& fields, const std::string& param, const std::string& words) {
        const json reply = complete(fields, 400);
        EXPECT_EQ(reply["error"]["param"], param) << reply.dump();
        EXPECT_NE(reply["error"]["message"].get<std::string>().find(words), std::string::npos) << reply.dump();
    };
    refused({{"guided_json", {{"type", "object"}, {"not", {{"type", "string"}}}}}}, "guided_json", "'not'");
    refused({{"guided_regex", "(a"}}, "guided_regex", "regex");
    refused({{"guided_regex", "(?<=a)b"}}, "guided_regex", "lookbehind");
    refused({{"grammar", "root ::= item"}}, "grammar", "'item'");
    refused({{"grammar", "root ::= [^\\x00-\\U0010FFFF]"}}, "grammar", "no text satisfies it");
    refused({{"guided_choice", json::array()}}, "guided_choice", "non-empty");
    refused({{"guided_json", kPersonSchema}, {"guided_regex", "a"}}, "guided_regex", "both constrain");
    refused({{"response_format", {{"type", "xml"}}}}, "response_format", "\"xml\"");
    refused({{"guided_json", "{not json"}}, "guided_json", "not a JSON Schema");
    // The grammar's end needs EOS.
    const json eos = complete({{"guided_regex", "a+"}, {"ignore_eos", true}}, 400);
    EXPECT_NE(eos["error"]["message"].get<std::string>().find("ignore_eos"), std::string::npos) << eos.dump();
    // "text" asks for nothing.
    EXPECT_EQ(complete({{"response_format", {{"type", "text"}}}, {"max_tokens", 3}})["choices"].size(), 1u);
}

// An ambiguous grammar's parse costs the square of the text per byte: the request ends with a 400 naming the field
// once a byte needs too much work (well under a second of the engine's time), and the server goes on serving.
TEST_F(ServeStructured, AHostileAmbiguousGrammarEndsItsRequestNotTheServer) {
    const auto started = std::chrono::steady_clock::now();
    // EOS (id 2 in the synthetic vocabulary) pushed away: the text could end anywhere, and must not.
    const json reply = complete({{"guided_grammar", "root ::= root root | \"a\" | \"b\""}, {"max_tokens", 500},
                                 {"logit_bias", {{"2", -100}}}, {"seed", 1}},
                                400);
    EXPECT_EQ(reply["error"]["param"], "guided_grammar") << reply.dump();
    EXPECT_NE(reply["error"]["message"].get<std::string>().find("ambiguous"), std::string::npos) << reply.dump();
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
    EXPECT_EQ(complete({{"guided_regex", "[ab]{3}"}})["choices"][0]["text"].get<std::string>().size(), 3u);
}

}  // namespace
}  // namespace tern
