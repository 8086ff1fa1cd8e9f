// Grammar-constrained requests in the engine, on a model with random weights (the hardest case for a grammar: the
// model has no idea of it). Every output must be a sentence of its grammar, ended by EOS only where the grammar may
// end; at temperature 0, a request's tokens must equal its alone-run whatever else runs, preempts or shares its
// prefix; requests without a grammar are untouched by those with one.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine/engine.h"
#include "formats/gguf.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/tokenizer_vocabulary.h"
#include "synthetic_model_suite.h"

namespace tern::engine {
namespace {

constexpr int32_t kEos = 2;  // the synthetic vocabulary's

// Bounded everywhere, so that a random model is forced to finish within 80 tokens (each token is at least a byte).
constexpr const char* kObjectGrammar = R"(
root ::= "{\"n\": " [0-9]{1,3} (", \"s\": \"" [a-z ]{0,12} "\"")? (", \"e\": " ("true" | "false" | "null"))? "}"
)";

class EngineGrammar : public testing::SyntheticModelSuite<41> {
protected:
    std::shared_ptr<const grammar::CompiledGrammar> compile(const char* text) {
        if (!vocabulary_) {
            auto gguf = GgufFile::open(std::string(TERN_TEST_TMP) + "/suite-tiny-q8_0-41.gguf");
            EXPECT_TRUE(gguf.is_ok());
            auto tokenizer = Tokenizer::from_gguf(*gguf.value());
            EXPECT_TRUE(tokenizer.is_ok());
            vocabulary_ = grammar::vocabulary_of(*tokenizer.value(), model_->hparams().vocab_size);
        }
        return std::make_shared<grammar::CompiledGrammar>(grammar::parse_gbnf(text).value(), vocabulary_);
    }

    std::unique_ptr<Engine> engine(uint64_t kv_bytes = 64 << 20, int max_batched_tokens = 512) {
        EngineConfig config;
        config.kv_cache_bytes = kv_bytes;
        config.max_batched_tokens = max_batched_tokens;
        auto created = Engine::create(*model_, *pool_, config);
        EXPECT_TRUE(created.is_ok()) << created.status().message();
        return std::move(created.value());
    }

    struct Finished {
        std::vector<int32_t> tokens;
        FinishReason reason = FinishReason::kAbort;
    };
    static std::map<RequestId, Finished> run(Engine& engine) {
        std::map<RequestId, Finished> results;
        while (engine.has_unfinished_requests()) {
            auto outputs = engine.step();
            EXPECT_TRUE(outputs.is_ok()) << outputs.status().message();
            if (!outputs.is_ok()) break;
            for (const RequestOutput& output : outputs.value()) {
                if (output.token) results[output.id].tokens.push_back(*output.token);
                if (output.finish_reason) results[output.id].reason = *output.finish_reason;
            }
        }
        return results;
    }

    std::string text_of(const std::vector<int32_t>& tokens) const {
        std::string text;
        for (int32_t token : tokens) text += vocabulary_->bytes(token);
        return text;
    }

    std::shared_ptr<const grammar::TokenVocabulary> vocabulary_;
};

TEST_F(EngineGrammar, RandomWeightsProduceSentencesOfTheGrammar) {
    auto compiled = compile(kObjectGrammar);
    auto engine_ = engine();
    for (RequestId id = 0; id < 16; ++id) {
        EngineRequest request{.id = id, .prompt = {1, 300 + static_cast<int32_t>(id), 400}, .max_tokens = 80,
                              .stop_tokens = {kEos}, .grammar = compiled};
        request.sampling.seed = id;
        request.sampling.temperature = id % 4 == 0 ? 0.0f : 1.5f;
        ASSERT_TRUE(engine_->add_request(request).is_ok());
    }
    for (const auto& [id, finished] : run(*engine_)) {
        ASSERT_FALSE(finished.tokens.empty());
        EXPECT_EQ(finished.reason, FinishReason::kStop) << "request " << id;
        EXPECT_EQ(finished.tokens.back(), kEos) << "request " << id;
        const std::vector<int32_t> body(finished.tokens.begin(), finished.tokens.end() - 1);
        EXPECT_TRUE(grammar::matches(compiled->grammar(), text_of(body))) << "request " << id << ": " << text_of(body);
    }
}

// Unbounded strings and arrays: a random model left alone runs to max_tokens inside a string. With the budget
// kept (the engine steers along a shortest completion once the tokens left get tight), every request ends with EOS
// in a sentence of the grammar, however small max_tokens is (as long as the shortest sentence fits).
TEST_F(EngineGrammar, RequestsFinishWithinMaxTokensOnUnboundedGrammars) {
    auto compiled = compile(R"(
        root ::= "{\"items\": [" (value ("," value)*)? "], \"note\": " string "}"
        value ::= string | [0-9]+ | "[" (value ("," value)*)? "]"
        string ::= "\"" [^"\\]* "\""
    )");
    auto engine_ = engine();
    const int budgets[] = {40, 25, 60, 120};
    for (RequestId id = 0; id < 16; ++id) {
        EngineRequest request{.id = id, .prompt = {1, 700 + static_cast<int32_t>(id)}, .max_tokens = budgets[id % 4],
                              .stop_tokens = {kEos}, .grammar = compiled};
        request.sampling.seed = 100 + id;
        request.sampling.temperature = 1.5f;
        ASSERT_TRUE(engine_->add_request(request).is_ok());
    }
    for (const auto& [id, finished] : run(*engine_)) {
        EXPECT_EQ(finished.reason, FinishReason::kStop) << "request " << id << ": " << text_of(finished.tokens);
        EXPECT_LE(static_cast<int>(finished.tokens.size()), budgets[id % 4]);
        if (finished.tokens.empty() || finished.tokens.back() != kEos) continue;
        const std::vector<int32_t> body(finished.tokens.begin(), finished.tokens.end() - 1);
        EXPECT_TRUE(grammar::matches(compiled->grammar(), text_of(body))) << "request " << id << ": " << text_of(body);
    }
}

TEST_F(EngineGrammar, TokensEqualTheAloneRunUnderPreemptionAndBatching) {
    auto compiled = compile(kObjectGrammar);
    std::mt19937 rng(5);
    std::vector<EngineRequest> requests;
    for (RequestId id = 0; id < 12; ++id) {
        std::vector<int32_t> prompt = {1, 500, 501, 502, 503, 504, 505, 506};  // a shared prefix
        for (int i = 0; i < 6; ++i) prompt.push_back(static_cast<int32_t>(300 + rng() % 200));
        EngineRequest request{.id = id, .prompt = prompt, .max_tokens = 60, .stop_tokens = {kEos}};
        if (id % 3 != 2) request.grammar = compiled;  // a third of them free, beside the constrained ones
        request.sampling.temperature = 0.0f;
        requests.push_back(request);
    }
    std::map<RequestId, Finished> alone;
    for (const EngineRequest& request : requests) {
        auto single = engine();
        ASSERT_TRUE(single->add_request(request).is_ok());
        alone[request.id] = run(*single)[request.id];
    }
    // A KV pool of a few blocks and a small step budget: chunked prefill, preemption and recompute.
    auto crowded = engine(8 * KvCache::bytes_per_block(model_->hparams(), 16, KvType::kF16), 24);
    for (const EngineRequest& request : requests) ASSERT_TRUE(crowded->add_request(request).is_ok());
    const auto together = run(*crowded);
    EXPECT_GT(crowded->stats().num_preemptions, 0) << "the pool was meant to be too small";
    for (const EngineRequest& request : requests) {
        EXPECT_EQ(together.at(request.id).tokens, alone.at(request.id).tokens) << "request " << request.id;
    }
}

TEST_F(EngineGrammar, AGrammarWithoutAStopTokenIsRefused) {
    auto engine_ = engine();
    const Status status = engine_->add_request({.id = 1, .prompt = {1, 5}, .grammar = compile(kObjectGrammar)});
    EXPECT_FALSE(status.is_ok());
    EXPECT_NE(status.message().find("ignore_eos"), std::string::npos) << status.message();
}

TEST_F(EngineGrammar, AGrammarForAnotherVocabularyIsRefused) {
    auto other = std::make_shared<grammar::TokenVocabulary>(std::vector<std::string>{"a", "b"});
    auto compiled = std::make_shared<grammar::CompiledGrammar>(grammar::parse_gbnf("root ::= \"a\"").value(), other);
    auto engine_ = engine();
    const Status status = engine_->add_request({.id = 1, .prompt = {1, 5}, .stop_tokens = {kEos}, .grammar = compiled});
    EXPECT_FALSE(status.is_ok());
    EXPECT_NE(status.message().find("vocabulary of 2 tokens"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace tern::engine
