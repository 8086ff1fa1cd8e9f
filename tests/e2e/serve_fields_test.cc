// tern serve with the generation fields of issue #17's finding 12, on stories260K at temperature 0: logit_bias
// bans and forces tokens, min_tokens holds off a stop token, stop_token_ids end a request, echo leads with the
// prompt, best_of keeps the likeliest choices, usage reports prefix-cache hits, chat_template_kwargs reach the
// template, suffix is refused for a model without fill-in-the-middle tokens, and prompt_logprobs (and echo with
// logprobs) score the prompt as generation scores its own tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <numeric>
#include <nlohmann/json.hpp>

#include "run_command.h"
#include "serve_process.h"

namespace tern {
namespace {

using nlohmann::json;

const std::string kPrompt = "Once upon a time";
constexpr int kNumTokens = 8;

class ServeFields : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        server_ = std::make_unique<testing::ServeProcess>();
        // An f32 KV cache as `tern generate` keeps, so that the server's greedy tokens are generate's.
        ASSERT_EQ(server_->start({"-m", testing::kStoriesModel, "-t", "1", "--kv-cache-type", "f32"}), "");
        const testing::CommandResult generated = testing::run_tern(
            "generate --json --temp 0 -n " + std::to_string(kNumTokens) + " -m " + testing::kStoriesModel + " -p '" +
            kPrompt + "'");
        ASSERT_EQ(generated.exit_code, 0) << generated.err;
        greedy_ = json::parse(generated.out)["tokens"].get<std::vector<int32_t>>();
        ASSERT_EQ(greedy_.size(), static_cast<size_t>(kNumTokens)) << generated.out;
    }
    static void TearDownTestSuite() {
        if (server_) {
            EXPECT_EQ(server_->stop(), 0) << server_->log();
        }
        server_.reset();
    }

    static json post(const json& body, int expected_status = 200, const std::string& path = "/v1/completions") {
        const testing::HttpReply reply = testing::http_post(server_->port(), path, body.dump());
        EXPECT_EQ(reply.status, expected_status) << body.dump() << ": " << reply.body;
        return json::parse(reply.body, nullptr, false);
    }
    static json greedy_request(int max_tokens = kNumTokens) {
        return {{"prompt", kPrompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
    }
    static void expect_refused(const json& body, const std::string& param) {
        const json reply = post(body, 400);
        EXPECT_EQ(reply["error"]["param"], param) << reply.dump();
    }
    // The token pieces of the first choice (completions logprobs).
    static std::vector<std::string> pieces(const json& reply) {
        return reply["choices"][0]["logprobs"]["tokens"].get<std::vector<std::string>>();
    }

    static std::unique_ptr<testing::ServeProcess> server_;
    static std::vector<int32_t> greedy_;  // `tern generate --temp 0`'s tokens for kPrompt
};

std::unique_ptr<testing::ServeProcess> ServeFields::server_;
std::vector<int32_t> ServeFields::greedy_;

TEST_F(ServeFields, LogitBiasBansTheGreedyTokenAndForcesAnother) {
    json request = greedy_request();
    request["logprobs"] = 0;
    const json plain = post(request);
    const std::vector<std::string> plain_pieces = pieces(plain);
    ASSERT_EQ(plain_pieces.size(), static_cast<size_t>(kNumTokens));

    request["logit_bias"] = {{std::to_string(greedy_[0]), -100}};  // OpenAI's object form
    const json banned = post(request);
    EXPECT_NE(pieces(banned)[0], plain_pieces[0]) << "the greedy first token is banned";
    EXPECT_NE(banned["choices"][0]["text"], plain["choices"][0]["text"]);
    request["logit_bias"] = json::array({json::array({greedy_[0], false})});  // llama-server's "never"
    EXPECT_EQ(post(request)["choices"][0]["text"], banned["choices"][0]["text"]) << "both forms ban alike";

    request["logit_bias"] = json::array({json::array({greedy_[3], 100})});
    const std::vector<std::string> forced = pieces(post(request));
    ASSERT_EQ(forced.size(), static_cast<size_t>(kNumTokens));
    for (const std::string& piece : forced) EXPECT_EQ(piece, plain_pieces[3]) << "+100 wins every step";

    request["logit_bias"] = {{"99999", 1}};
    expect_refused(request, "logit_bias");
}

TEST_F(ServeFields, StopTokenIdsEndARequestAndMinTokensHoldsThemOff) {
    json request = greedy_request(10);
    request["stop_token_ids"] = {greedy_[0]};
    const json stopped = post(request);
    EXPECT_EQ(stopped["usage"]["completion_tokens"], 1) << stopped.dump();
    EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(stopped["choices"][0]["text"], "") << "a stop token's text is not shown, as EOS's";

    request["min_tokens"] = 5;
    const json held = post(request);
    EXPECT_GE(held["usage"]["completion_tokens"].get<int>(), 5) << held.dump();
    EXPECT_FALSE(held["choices"][0]["text"].get<std::string>().empty());

    request["min_tokens"] = 11;
    expect_refused(request, "min_tokens");
    request.erase("min_tokens");
    request["stop_token_ids"] = {99999};
    expect_refused(request, "stop_token_ids");
}

// vLLM: stop strings are looked for only after min_tokens tokens.
TEST_F(ServeFields, StopStringsWaitForMinTokens) {
    json request = greedy_request(12);
    const std::string full = post(request)["choices"][0]["text"];
    const std::string stop = full.substr(1, 2);  // within the first tokens' text
    request["stop"] = stop;
    const json early = post(request);
    EXPECT_EQ(early["choices"][0]["text"], full.substr(0, 1)) << early.dump();
    request["min_tokens"] = 6;
    const json later = post(request);
    EXPECT_GE(later["usage"]["completion_tokens"].get<int>(), 6) << later.dump();
    EXPECT_GT(later["choices"][0]["text"].get<std::string>().size(), 1u) << later.dump();
}

TEST_F(ServeFields, EchoLeadsWithThePrompt) {
    json request = greedy_request(5);
    const std::string continuation = post(request)["choices"][0]["text"];
    request["echo"] = true;
    EXPECT_EQ(post(request)["choices"][0]["text"], kPrompt + continuation);

    request["stream"] = true;
    const testing::StreamReply streamed =
        testing::post_stream(server_->port(), "/v1/completions", request.dump());
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    ASSERT_TRUE(streamed.done);
    std::string text;
    for (const std::string& event : streamed.events) {
        if (event == "[DONE]") continue;
        const json chunk = json::parse(event);
        if (text.empty()) {
            EXPECT_EQ(chunk["choices"][0]["text"].get<std::string>().rfind(kPrompt, 0), 0u) << "sent first: " << event;
        }
        text += chunk["choices"][0]["text"].get<std::string>();
    }
    EXPECT_EQ(text, kPrompt + continuation);
}

// best_of draws the same choices as n with the same seed (sample i gets seed + i), and returns the n whose tokens
// have the highest summed log-probability, best first; every generated token is billed, as OpenAI does.
TEST_F(ServeFields, BestOfReturnsTheLikeliestChoices) {
    constexpr int kMaxTokens = 16;
    json request = {{"prompt", kPrompt}, {"max_tokens", kMaxTokens}, {"temperature", 1.5}, {"seed", 77},
                    {"ignore_eos", true}, {"n", 4}, {"logprobs", 0}};
    const json all = post(request);
    std::vector<std::pair<double, std::string>> scored;
    for (const json& choice : all["choices"]) {
        const auto logprobs = choice["logprobs"]["token_logprobs"].get<std::vector<double>>();
        scored.emplace_back(std::accumulate(logprobs.begin(), logprobs.end(), 0.0), choice["text"]);
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& left, const auto& right) {
        return left.first > right.first;
    });
    ASSERT_NE(scored[0].second, scored[3].second) << "the seed gives choices of different likelihood";

    request.erase("logprobs");
    request["n"] = 2;
    request["best_of"] = 4;
    const json best = post(request);
    ASSERT_EQ(best["choices"].size(), 2u) << best.dump();
    EXPECT_EQ(best["choices"][0]["text"], scored[0].second);
    EXPECT_EQ(best["choices"][1]["text"], scored[1].second);
    EXPECT_EQ(best["choices"][1]["index"], 1);
    EXPECT_TRUE(best["choices"][0]["logprobs"].is_null()) << "not asked for";
    EXPECT_EQ(best["usage"]["completion_tokens"], 4 * kMaxTokens);

    request["stream"] = true;
    expect_refused(request, "best_of");
    request.erase("stream");
    request["best_of"] = 1;
    expect_refused(request, "best_of");
}

TEST_F(ServeFields, UsageReportsPromptTokensFromThePrefixCache) {
    std::string story = "The cat sat by the warm fire and";
    while (story.size() < 500) story += " the little dog ran to the park to play with a big red ball and";
    json request = {{"prompt", story}, {"max_tokens", 2}, {"temperature", 0}};
    const json first = post(request);
    ASSERT_GE(first["usage"]["prompt_tokens"].get<int>(), 100) << first.dump();
    EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0) << first.dump();
    const json second = post(request);
    const int cached = second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
    EXPECT_GT(cached, 0) << second.dump();
    EXPECT_LE(cached, second["usage"]["prompt_tokens"].get<int>());

    request["stream"] = true;
    request["stream_options"] = {{"include_usage", true}};
    const testing::StreamReply streamed = testing::post_stream(server_->port(), "/v1/completions", request.dump());
    ASSERT_TRUE(streamed.done) << streamed.body;
    const json usage_chunk = json::parse(streamed.events[streamed.events.size() - 2]);
    EXPECT_EQ(usage_chunk["usage"]["prompt_tokens_details"]["cached_tokens"], cached) << streamed.body;
}

// vLLM's cache_salt: a cached prefix is found only by requests with the same salt.
TEST_F(ServeFields, CacheSaltKeepsCachedPrefixesApart) {
    std::string story = "A salted tale: the fox and the crow met by the river and";
    while (story.size() < 500) story += " the crow sang while the fox listened and waited for the cheese to fall and";
    json request = {{"prompt", story}, {"max_tokens", 2}, {"temperature", 0}, {"cache_salt", "tenant-a"}};
    const auto cached_tokens = [](const json& reply) {
        return reply["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
    };
    EXPECT_EQ(cached_tokens(post(request)), 0);
    EXPECT_GT(cached_tokens(post(request)), 0) << "the same salt shares";
    request["cache_salt"] = "tenant-b";
    EXPECT_EQ(cached_tokens(post(request)), 0) << "another salt does not";
    request.erase("cache_salt");
    EXPECT_EQ(cached_tokens(post(request)), 0) << "nor does no salt";
    request["cache_salt"] = 5;
    expect_refused(request, "cache_salt");
}

// The prompt is kPrompt followed by its greedy continuation, as token ids: at the continuation's positions each
// prompt token must be the most likely one (rank 1) with the log-probability generation reported for it, although
// these come from prompt rows of one prefill and those from decode steps. echo with logprobs gives the same values in
// OpenAI's layout, streamed or not, and chat reports the templated prompt's once, at the top of the response.
TEST_F(ServeFields, PromptLogprobsScoreThePromptAsGenerationScoresItsTokens) {
    const json tokenized = json::parse(testing::http_post(server_->port(), "/tokenize",
                                                          json{{"prompt", kPrompt}}.dump()).body);
    const std::vector<int32_t> prompt_ids = tokenized["tokens"].get<std::vector<int32_t>>();
    json generation = greedy_request();
    generation["logprobs"] = 0;
    const auto generated_logprobs =
        post(generation)["choices"][0]["logprobs"]["token_logprobs"].get<std::vector<double>>();
    ASSERT_EQ(generated_logprobs.size(), greedy_.size());

    std::vector<int32_t> ids = prompt_ids;
    ids.insert(ids.end(), greedy_.begin(), greedy_.end());
    const json scored = post({{"prompt", ids}, {"max_tokens", 1}, {"temperature", 0}, {"prompt_logprobs", 2}});
    const json& positions = scored["choices"][0]["prompt_logprobs"];
    ASSERT_EQ(positions.size(), ids.size()) << scored.dump();
    EXPECT_TRUE(positions[0].is_null()) << "the first token follows nothing";
    for (size_t idx = 1; idx < ids.size(); ++idx) {
        const json& at = positions[idx];
        const std::string key = std::to_string(ids[idx]);
        ASSERT_TRUE(at.contains(key)) << idx << ": " << at.dump();
        EXPECT_GE(at.size(), 2u) << at.dump();
        EXPECT_LE(at.size(), 3u) << "the token and two alternatives: " << at.dump();
        for (const auto& [id, entry] : at.items()) {
            EXPECT_LE(entry["logprob"].get<double>(), 0.0);
            EXPECT_GE(entry["rank"].get<int>(), 1);
            EXPECT_TRUE(entry["decoded_token"].is_string());
        }
        if (idx < prompt_ids.size()) continue;
        const size_t generated = idx - prompt_ids.size();
        EXPECT_EQ(at[key]["rank"], 1) << "greedy token " << generated;
        EXPECT_NEAR(at[key]["logprob"].get<double>(), generated_logprobs[generated], 1e-4) << "token " << generated;
    }
    EXPECT_EQ(scored["usage"]["prompt_tokens_details"]["cached_tokens"], 0) << "every position must be computed";

    // echo + logprobs: OpenAI's layout, the prompt's tokens first (the first with null), then the generated one.
    json echoed_request = {{"prompt", ids}, {"max_tokens", 1}, {"temperature", 0}, {"echo", true}, {"logprobs", 1}};
    const json echoed = post(echoed_request)["choices"][0]["logprobs"];
    ASSERT_EQ(echoed["tokens"].size(), ids.size() + 1) << echoed.dump();
    EXPECT_TRUE(echoed["token_logprobs"][0].is_null());
    EXPECT_TRUE(echoed["top_logprobs"][0].is_null());
    for (size_t idx = 1; idx < ids.size(); ++idx) {
        EXPECT_EQ(echoed["token_logprobs"][idx], positions[idx][std::to_string(ids[idx])]["logprob"]) << idx;
        EXPECT_EQ(echoed["top_logprobs"][idx].size(), 1u) << idx;
    }
    echoed_request["stream"] = true;
    const testing::StreamReply streamed = testing::post_stream(server_->port(), "/v1/completions",
                                                               echoed_request.dump());
    ASSERT_TRUE(streamed.done) << streamed.body;
    const json first_chunk = json::parse(streamed.events[0])["choices"][0]["logprobs"];
    EXPECT_EQ(first_chunk["token_logprobs"], echoed["token_logprobs"]) << "streamed with the first chunk";

    json chat = {{"messages", {{{"role", "user"}, {"content", kPrompt}}}}, {"max_tokens", 1}, {"prompt_logprobs", 0}};
    const json chat_reply = post(chat, 200, "/v1/chat/completions");
    ASSERT_EQ(chat_reply["prompt_logprobs"].size(), chat_reply["usage"]["prompt_tokens"].get<size_t>()) << chat_reply;
    EXPECT_FALSE(chat_reply["choices"][0].contains("prompt_logprobs"));
    chat["stream"] = true;
    const testing::HttpReply refused = testing::http_post(server_->port(), "/v1/chat/completions", chat.dump());
    EXPECT_EQ(refused.status, 400) << refused.body;
    EXPECT_EQ(json::parse(refused.body)["error"]["param"], "prompt_logprobs");
}

TEST_F(ServeFields, SuffixNeedsFillInTheMiddleTokens) {
    json request = greedy_request(4);
    request["suffix"] = " and they lived happily ever after.";
    const json reply = post(request, 400);
    EXPECT_EQ(reply["error"]["param"], "suffix");
    EXPECT_NE(reply["error"]["message"].get<std::string>().find("fill-in-the-middle"), std::string::npos) << reply;
}

// A template that prints a kwarg: its effect shows in the prompt's token count.
TEST(ServeChatTemplateKwargs, ReachTheTemplate) {
    const std::string path = testing::temp_dir() + "/kwargs_template.jinja";
    std::ofstream(path) << "{% for m in messages %}{{ m.content }}{% endfor %}"
                           "{% if greeting is defined %} {{ greeting }}{% endif %}"
                           "{% if add_generation_prompt %} And then{% endif %}";
    testing::ServeProcess server;
    ASSERT_EQ(server.start({"-m", testing::kStoriesModel, "-t", "1", "--chat-template", path}), "");
    const auto prompt_tokens = [&](const json& kwargs, int expected_status = 200) {
        json request = {{"messages", {{{"role", "user"}, {"content", kPrompt}}}}, {"max_tokens", 1}};
        if (!kwargs.is_null()) request["chat_template_kwargs"] = kwargs;
        const testing::HttpReply reply = testing::http_post(server.port(), "/v1/chat/completions", request.dump());
        EXPECT_EQ(reply.status, expected_status) << reply.body;
        const json body = json::parse(reply.body);
        return expected_status == 200 ? body["usage"]["prompt_tokens"].get<int>() : -1;
    };
    const int plain = prompt_tokens(nullptr);
    EXPECT_GT(prompt_tokens({{"greeting", "hello there, little friend"}}), plain + 3);
    EXPECT_LT(prompt_tokens({{"add_generation_prompt", false}}), plain);
    EXPECT_EQ(prompt_tokens({{"unused", {1, 2, {{"a", nullptr}}}}}), plain) << "variables the template ignores";
    prompt_tokens({{"messages", json::array()}}, 400);
    prompt_tokens("thinking", 400);
    EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace tern
