// /v1/embeddings end to end: OpenAI's error format for bad input (naming the field), --pooling mean and last give
// different unit vectors, base64 carries the same floats, and the metrics count the inputs' tokens as prompt tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "serve_process.h"

namespace tern {
namespace {

using nlohmann::json;

std::vector<float> embedding_of(const testing::ServeProcess& server, const std::string& text) {
    const testing::HttpReply reply =
        testing::http_post(server.port(), "/v1/embeddings", json{{"input", text}}.dump());
    EXPECT_EQ(reply.status, 200) << reply.body;
    const json body = json::parse(reply.body, nullptr, false);
    if (!body.is_object()) return {};
    return body["data"][0]["embedding"].get<std::vector<float>>();
}

// Little-endian float32 values from base64 text (RFC 4648 with padding), written independently of the server's encoder.
std::vector<float> floats_from_base64(const std::string& text) {
    std::string bytes;
    uint32_t bits = 0;
    int num_bits = 0;
    for (char c : text) {
        if (c == '=') break;
        const size_t value = std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/").find(c);
        bits = (bits << 6) | static_cast<uint32_t>(value);
        num_bits += 6;
        if (num_bits >= 8) bytes += static_cast<char>((bits >> (num_bits -= 8)) & 0xff);
    }
    std::vector<float> floats(bytes.size() / 4);
    std::memcpy(floats.data(), bytes.data(), floats.size() * 4);
    return floats;
}

TEST(ServeEmbeddings, BadInputGetsAClearErrorNamingTheField) {
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", testing::kStoriesModel}), "");
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({})", "input"},
        {R"({"input": ""})", "input"},
        {R"({"input": []})", "input"},
        {R"({"input": [["a"]]})", "input"},
        {R"({"input": [1, -2]})", "input"},
        {R"({"input": "hi", "encoding_format": "int8"})", "encoding_format"},
        {R"({"input": "hi", "dimensions": 8})", "dimensions"},
        {R"({"input": "hi", "truncate": true})", "truncate"},
        {R"({"input": "hi", "model": "other"})", "model"},
    };
    for (const auto& [body, param] : cases) {
        const testing::HttpReply reply = testing::http_post(server.port(), "/v1/embeddings", body);
        const int expected = param == "model" ? 404 : 400;
        EXPECT_EQ(reply.status, expected) << body << ": " << reply.body;
        const json error = json::parse(reply.body, nullptr, false);
        ASSERT_TRUE(error.is_object() && error.contains("error")) << reply.body;
        EXPECT_EQ(error["error"]["param"], param) << body;
    }
    EXPECT_EQ(embedding_of(server, "still serving").size(), 64u);
    EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(ServeEmbeddings, PoolingsGiveUnitVectorsAndBase64CarriesTheSameFloats) {
    std::vector<float> mean, last;
    for (const char* pooling : {"mean", "last"}) {
        testing::ServeProcess server;
        ASSERT_EQ(server.start({"-m", testing::kStoriesModel, "--pooling", pooling}), "");
        std::vector<float>& vector = std::string(pooling) == "mean" ? mean : last;
        vector = embedding_of(server, "Once upon a time there was a cat");
        double squares = 0;
        for (float value : vector) squares += double(value) * value;
        EXPECT_NEAR(squares, 1.0, 1e-5) << pooling;

        const testing::HttpReply reply = testing::http_post(
            server.port(), "/v1/embeddings",
            R"({"input": "Once upon a time there was a cat", "encoding_format": "base64"})");
        ASSERT_EQ(reply.status, 200) << reply.body;
        const std::string encoded = json::parse(reply.body)["data"][0]["embedding"];
        EXPECT_EQ(floats_from_base64(encoded), vector);
        EXPECT_EQ(testing::metric_value(testing::http_get(server.port(), "/metrics").body,
                                        "tern:request_success_total{finished_reason=\"stop\"}"), 2);
        EXPECT_EQ(server.stop(), 0) << server.log();
    }
    ASSERT_EQ(mean.size(), last.size());
    EXPECT_NE(mean, last);
}

}  // namespace
}  // namespace tern
