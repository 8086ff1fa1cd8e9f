#include <gtest/gtest.h>

#include "api/openai_types.h"
#include "api/stream_chunk.h"

namespace tern::api {
namespace {

using Json = nlohmann::json;

// Chunks as llama.cpp's server streams them (completions and chat).
TEST(StreamChunk, DecodesLlamaCppChunks) {
    Result<StreamChunk> text = parse_stream_chunk(
        R"({"choices":[{"text":" Hello","index":0,"logprobs":null,"finish_reason":null}],"created":1,"model":"m",)"
        R"("system_fingerprint":"b1","object":"text_completion","id":"cmpl-1"})");
    ASSERT_TRUE(text.is_ok()) << text.status().message();
    EXPECT_TRUE(text.value().has_text());
    EXPECT_EQ(text.value().choices[0].text, " Hello");
    EXPECT_FALSE(text.value().usage.has_value());

    Result<StreamChunk> role = parse_stream_chunk(
        R"({"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"object":)"
        R"("chat.completion.chunk"})");
    ASSERT_TRUE(role.is_ok());
    EXPECT_FALSE(role.value().has_text());
    EXPECT_EQ(role.value().choices[0].role, "assistant");

    Result<StreamChunk> last = parse_stream_chunk(
        R"({"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"object":"chat.completion.chunk",)"
        R"("usage":{"completion_tokens":247,"prompt_tokens":1085,"total_tokens":1332},"timings":{"predicted_n":247}})");
    ASSERT_TRUE(last.is_ok());
    EXPECT_FALSE(last.value().has_text());
    EXPECT_EQ(last.value().choices[0].finish_reason, "stop");
    ASSERT_TRUE(last.value().usage.has_value());
    EXPECT_EQ(last.value().usage->completion_tokens, 247);
    EXPECT_EQ(last.value().usage->prompt_tokens, 1085);
}

// Chunks as vLLM streams them: "usage": null everywhere, then a usage-only chunk with no choices.
TEST(StreamChunk, DecodesVllmChunks) {
    Result<StreamChunk> role = parse_stream_chunk(
        R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":)"
        R"({"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null})");
    ASSERT_TRUE(role.is_ok());
    EXPECT_FALSE(role.value().has_text());
    EXPECT_FALSE(role.value().usage.has_value());

    Result<StreamChunk> reasoning = parse_stream_chunk(
        R"({"choices":[{"index":0,"delta":{"reasoning_content":"Let me think"},"finish_reason":null}]})");
    ASSERT_TRUE(reasoning.is_ok());
    EXPECT_EQ(reasoning.value().choices[0].text, "Let me think");

    Result<StreamChunk> usage = parse_stream_chunk(
        R"({"id":"c","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,)"
        R"("total_tokens":44,"completion_tokens":32}})");
    ASSERT_TRUE(usage.is_ok());
    EXPECT_TRUE(usage.value().choices.empty());
    EXPECT_EQ(usage.value().usage->completion_tokens, 32);
    EXPECT_EQ(usage.value().usage->total_tokens, 44);
}

TEST(StreamChunk, ErrorsAndBadChunks) {
    Result<StreamChunk> error = parse_stream_chunk(R"({"error":{"message":"out of memory","type":"server_error",)"
                                                   R"("code":500}})");
    ASSERT_TRUE(error.is_ok());
    ASSERT_TRUE(error.value().error.has_value());
    EXPECT_EQ(error.value().error->message, "out of memory");
    EXPECT_EQ(error.value().error->code, "500");
    EXPECT_FALSE(parse_stream_chunk("{not json").is_ok());
    EXPECT_FALSE(parse_stream_chunk("[1,2]").is_ok());
    EXPECT_FALSE(parse_stream_chunk(R"({"choices":{"text":"x"}})").is_ok());
    EXPECT_FALSE(parse_stream_chunk(R"({"choices":[{"text":5}]})").is_ok());
    EXPECT_FALSE(parse_stream_chunk(R"({"usage":{"completion_tokens":-1}})").is_ok());
    EXPECT_TRUE(is_done_marker("[DONE]"));
    EXPECT_TRUE(is_done_marker(" [DONE] \r"));
    EXPECT_FALSE(is_done_marker("[DONE]x"));
}

TEST(StreamChunk, EncodingRoundTripsForBothEndpoints) {
    StreamChunk chunk;
    chunk.id = "x";
    chunk.model = "m";
    chunk.choices.push_back({0, " hi", std::string("assistant"), std::string("length")});
    chunk.usage = Usage{3, 4, 7};
    for (Endpoint endpoint : {Endpoint::kCompletions, Endpoint::kChatCompletions}) {
        const Json encoded = to_json(chunk, endpoint, 123);
        Result<StreamChunk> decoded = parse_stream_chunk(encoded.dump());
        ASSERT_TRUE(decoded.is_ok());
        EXPECT_EQ(decoded.value().choices[0].text, " hi");
        EXPECT_EQ(decoded.value().choices[0].finish_reason, "length");
        EXPECT_EQ(decoded.value().usage->total_tokens, 7);
    }
    EXPECT_EQ(to_json(chunk, Endpoint::kChatCompletions, 1)["object"], "chat.completion.chunk");
}

TEST(GenerationRequest, EncodesWhatBenchClientsSend) {
    GenerationRequest request;
    request.model = "m";
    request.prompts = {{.token_ids = {5, 6, 7}, .is_tokens = true}};
    request.max_tokens = 32;
    request.stream = true;
    request.include_usage = true;
    request.ignore_eos = true;
    request.extra = {{"min_tokens", 4}};
    const Json body = to_json(request);
    EXPECT_EQ(body["prompt"], Json({5, 6, 7}));
    EXPECT_EQ(body["max_tokens"], 32);
    EXPECT_EQ(body["stream_options"]["include_usage"], true);
    EXPECT_EQ(body["ignore_eos"], true);
    EXPECT_EQ(body["min_tokens"], 4);
    EXPECT_FALSE(body.contains("temperature"));

    GenerationRequest chat;
    chat.endpoint = Endpoint::kChatCompletions;
    chat.messages = {{"user", "hello"}};
    const Json chat_body = to_json(chat);
    EXPECT_EQ(chat_body["messages"][0]["content"], "hello");
    EXPECT_FALSE(chat_body.contains("prompt"));
    EXPECT_FALSE(chat_body.contains("stream_options"));
}

TEST(GenerationRequest, ParsesAndValidatesBodies) {
    Result<GenerationRequest> completion = parse_generation_request(
        Endpoint::kCompletions, Json::parse(R"({"model":"m","prompt":"hi","max_tokens":8,"stream":true,)"
                                            R"("stream_options":{"include_usage":true},"top_p":0.9,"n":2,"seed":-3})"));
    ASSERT_TRUE(completion.is_ok()) << completion.status().message();
    ASSERT_EQ(completion.value().prompts.size(), 1u);
    EXPECT_EQ(completion.value().prompts[0].text, "hi");
    EXPECT_EQ(completion.value().max_tokens, 8);
    EXPECT_TRUE(completion.value().include_usage);
    EXPECT_EQ(completion.value().top_p, 0.9);
    EXPECT_EQ(completion.value().seed, -3);
    EXPECT_EQ(completion.value().extra, Json({{"n", 2}})) << "accepted fields without a member travel in extra";

    Result<GenerationRequest> chat = parse_generation_request(
        Endpoint::kChatCompletions,
        Json::parse(R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},)"
                    R"({"type":"text","text":"b"}]}],"max_completion_tokens":5})"));
    ASSERT_TRUE(chat.is_ok()) << chat.status().message();
    EXPECT_EQ(chat.value().messages[0].content, "ab");
    EXPECT_EQ(chat.value().max_tokens, 5);

    // Round trip: what the bench sends, a server parses back.
    GenerationRequest original;
    original.prompts = {{.text = "x y"}};
    original.max_tokens = 3;
    original.ignore_eos = true;
    Result<GenerationRequest> back = parse_generation_request(Endpoint::kCompletions, to_json(original));
    ASSERT_TRUE(back.is_ok());
    EXPECT_EQ(back.value().prompts[0].text, "x y");

    // A batch of prompts round-trips too.
    original.prompts = {{.text = "a"}, {.token_ids = {1, 2}, .is_tokens = true}};
    EXPECT_EQ(to_json(original)["prompt"], Json::parse(R"(["a", [1, 2]])"));
    Result<GenerationRequest> batch = parse_generation_request(Endpoint::kCompletions, to_json(original));
    ASSERT_TRUE(batch.is_ok()) << batch.status().message();
    ASSERT_EQ(batch.value().prompts.size(), 2u);
    EXPECT_EQ(batch.value().prompts[1].token_ids, (std::vector<int32_t>{1, 2}));
    EXPECT_TRUE(back.value().ignore_eos);

    const std::pair<Endpoint, const char*> bad[] = {
        {Endpoint::kCompletions, R"({})"},
        {Endpoint::kCompletions, R"({"prompt":"a","n_probs":2})"},
        {Endpoint::kCompletions, R"({"prompt":"a","max_tokens":-1})"},
        {Endpoint::kCompletions, R"({"prompt":"a","stream":"yes"})"},
        {Endpoint::kCompletions, R"({"prompt":"a","top_p":0})"},
        {Endpoint::kCompletions, R"({"prompt":"a","temperature":-1})"},
        {Endpoint::kChatCompletions, R"({"messages":[]})"},
        {Endpoint::kChatCompletions, R"({"messages":[{"content":"x"}]})"},
        {Endpoint::kChatCompletions, R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})"},
    };
    for (const auto& [endpoint, text] : bad) {
        Result<GenerationRequest> parsed = parse_generation_request(endpoint, Json::parse(text));
        EXPECT_FALSE(parsed.is_ok()) << text;
        if (!parsed.is_ok()) {
            EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
            EXPECT_FALSE(parsed.status().message().empty()) << text;
        }
    }
    EXPECT_FALSE(parse_generation_request(Endpoint::kCompletions, Json::array()).is_ok());
}

TEST(ApiError, ParsesOpenAiVllmAndPlainBodies) {
    EXPECT_EQ(parse_error_body(R"({"error":{"message":"bad","type":"invalid_request_error","code":400}})").message,
              "bad");
    const ApiError vllm = parse_error_body(R"({"object":"error","message":"overloaded","type":"x","code":503})");
    EXPECT_EQ(vllm.message, "overloaded");
    EXPECT_EQ(vllm.code, "503");
    EXPECT_EQ(parse_error_body("  Service Unavailable\n").message, "Service Unavailable");
    EXPECT_FALSE(find_api_error(Json::parse(R"({"choices":[]})")).has_value());
}

TEST(Endpoint, PathsMapBothWays) {
    EXPECT_EQ(endpoint_from_path("/v1/chat/completions").value(), Endpoint::kChatCompletions);
    EXPECT_EQ(endpoint_from_path(endpoint_path(Endpoint::kCompletions)).value(), Endpoint::kCompletions);
    EXPECT_FALSE(endpoint_from_path("/v1/embeddings").is_ok());
}

}  // namespace
}  // namespace tern::api
