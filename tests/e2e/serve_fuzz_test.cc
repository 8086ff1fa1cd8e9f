// tern serve against seeded random mutations of valid requests: fields dropped or replaced by values of every JSON
// type and extreme ranges, bodies with corrupted bytes or cut short. Whatever arrives, the reply is a success or a
// 4xx in OpenAI's error format, never a 5xx or a dropped connection, and the server keeps serving.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "serve_process.h"

namespace tern {
namespace {

using nlohmann::json;

class RequestMutator {
public:
    explicit RequestMutator(uint32_t seed) : rng_(seed) {}

    // A valid request for `path`, then one to three mutations of its fields.
    std::string next(const std::string& path) {
        json request = base(path);
        const int count = pick(1, 3);
        for (int idx = 0; idx < count; ++idx) mutate(request, 0);
        std::string body = request.dump(-1, ' ', false, json::error_handler_t::replace);
        if (chance(0.1)) corrupt_bytes(body);
        if (chance(0.05)) body.resize(static_cast<size_t>(pick(0, static_cast<int>(body.size()))));
        return body;
    }

private:
    json base(const std::string& path) {
        if (path == "/v1/chat/completions") {
            return {{"messages", json::array({{{"role", "user"}, {"content", "Once upon a time"}}})},
                    {"max_tokens", 4}, {"stream", chance(0.5)}};
        }
        if (path == "/tokenize") return {{"prompt", "Once upon a time"}};
        if (path == "/detokenize") return {{"tokens", json::array({1, 300, 301})}};
        return {{"prompt", chance(0.5) ? json("Once upon") : json::array({"a", "b"})},
                {"max_tokens", 4}, {"n", 2}, {"logprobs", 2}, {"stop", json::array({"x"})}, {"stream", chance(0.5)}};
    }

    json odd_value() {
        static const std::vector<json> kValues = {
            nullptr, true, false, 0, -1, 1, 2, 7.5, 0.5, 1e-320, 1e308, -1e308, int64_t{1} << 31,
            std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
            std::numeric_limits<uint64_t>::max(), "", std::string(5000, 'x'), "\xc3(", json::array(),
            json::object(), json::array({1, 2}), json::array({json::array()}), json({{"a", 1}}),
            json::array({{{"role", "user"}}}), json::array({{{"role", 3}, {"content", json::array()}}})};
        return kValues[static_cast<size_t>(pick(0, static_cast<int>(kValues.size()) - 1))];
    }

    void mutate(json& value, int depth) {
        static const std::vector<std::string> kKeys = {
            "model", "prompt", "messages", "max_tokens", "max_completion_tokens", "stream", "stream_options", "n",
            "logprobs", "top_logprobs", "stop", "temperature", "top_p", "top_k", "min_p", "seed", "presence_penalty",
            "frequency_penalty", "repetition_penalty", "priority", "echo", "logit_bias", "ignore_eos", "tokens",
            "role", "content", "add_special_tokens", "response_format", "tools"};
        if (value.is_object()) {
            const std::string& key = kKeys[static_cast<size_t>(pick(0, static_cast<int>(kKeys.size()) - 1))];
            const double roll = uniform_(rng_);
            if (roll < 0.2) {
                value.erase(key);
            } else if (roll < 0.6 || depth >= 3 || !value.contains(key)) {
                value[key] = odd_value();
            } else {
                mutate(value[key], depth + 1);
            }
        } else if (value.is_array() && !value.empty() && depth < 3 && chance(0.6)) {
            mutate(value[static_cast<size_t>(pick(0, static_cast<int>(value.size()) - 1))], depth + 1);
        } else if (value.is_array()) {
            value.push_back(odd_value());
        } else {
            value = odd_value();
        }
    }

    void corrupt_bytes(std::string& body) {
        if (body.empty()) return;
        const int count = pick(1, 5);
        for (int idx = 0; idx < count; ++idx) {
            body[static_cast<size_t>(pick(0, static_cast<int>(body.size()) - 1))] = static_cast<char>(pick(0, 255));
        }
    }

    int pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }
    bool chance(double probability) { return uniform_(rng_) < probability; }

    std::mt19937 rng_;
    std::uniform_real_distribution<double> uniform_{0.0, 1.0};
};

TEST(ServeFuzz, RandomlyMutatedRequestsGetAnAnswerOrAClearErrorAndTheServerKeepsServing) {
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", testing::kStoriesModel, "-t", "1", "--max-body-bytes", "65536"}), "");
    const std::vector<std::string> paths = {"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"};
    RequestMutator mutator(20261201);
    int num_ok = 0, num_refused = 0;
    for (int idx = 0; idx < 400; ++idx) {
        const std::string& path = paths[static_cast<size_t>(idx) % paths.size()];
        const std::string body = mutator.next(path);
        const testing::HttpReply reply = testing::http_post(server.port(), path, body);
        ASSERT_NE(reply.status, 0) << path << " " << body << ": no reply (" << reply.error << ")\n" << server.log();
        ASSERT_LT(reply.status, 500) << path << " " << body << ": " << reply.body;
        if (reply.status >= 400) {
            ++num_refused;
            const json error = json::parse(reply.body, nullptr, false);
            ASSERT_TRUE(error.is_object() && error.contains("error") && error["error"].contains("message"))
                << path << " " << body << ": " << reply.body;
        } else {
            ++num_ok;
        }
    }
    // Both kinds occur, so the mutations neither all break the request nor all leave it valid.
    EXPECT_GT(num_ok, 40);
    EXPECT_GT(num_refused, 40);
    const testing::HttpReply after = testing::http_post(
        server.port(), "/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 4})");
    ASSERT_EQ(after.status, 200) << after.body;
    EXPECT_EQ(json::parse(after.body)["usage"]["completion_tokens"], 4);
    EXPECT_EQ(testing::http_get(server.port(), "/health").status, 200);
    EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace tern
