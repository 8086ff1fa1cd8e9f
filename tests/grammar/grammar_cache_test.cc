// The server's cache of compiled grammars: the same text compiles once, the least recently used goes first, and a
// grammar that cannot produce anything with the vocabulary is refused with the reason.
#include <gtest/gtest.h>

#include <thread>

#include "grammar/grammar_cache.h"

namespace tern::grammar {
namespace {

std::shared_ptr<const TokenVocabulary> letters() {
    return std::make_shared<TokenVocabulary>(std::vector<std::string>{"", "a", "b", "ab", "c"});
}

TEST(GrammarCache, TheSameTextCompilesOnceAndTheOldestGoesFirst) {
    GrammarCache cache(letters(), 2);
    auto first = cache.get("root ::= \"a\"+");
    ASSERT_TRUE(first.is_ok()) << first.status().message();
    EXPECT_EQ(cache.get("root ::= \"a\"+").value(), first.value());
    EXPECT_EQ(cache.compiles(), 1u);
    EXPECT_EQ(cache.hits(), 1u);
    ASSERT_TRUE(cache.get("root ::= \"b\"").is_ok());
    ASSERT_TRUE(cache.get("root ::= \"a\"+").is_ok());  // now the most recent
    ASSERT_TRUE(cache.get("root ::= \"c\"").is_ok());   // evicts "b"
    EXPECT_EQ(cache.compiles(), 3u);
    ASSERT_TRUE(cache.get("root ::= \"a\"+").is_ok());
    EXPECT_EQ(cache.compiles(), 3u);
    ASSERT_TRUE(cache.get("root ::= \"b\"").is_ok());
    EXPECT_EQ(cache.compiles(), 4u);
}

TEST(GrammarCache, GrammarsThatCannotProduceAnythingAreRefused) {
    GrammarCache cache(letters());
    const auto message = [&](const std::string& text) {
        auto compiled = cache.get(text);
        return compiled.is_ok() ? std::string("accepted") : compiled.status().message();
    };
    EXPECT_NE(message("root ::= x\nx ::= \"a\" x").find("no text satisfies it"), std::string::npos);
    EXPECT_NE(message("root ::= [^\\x00-\\U0010FFFF]").find("no text satisfies it"), std::string::npos);
    EXPECT_NE(message("root ::= \"z\"").find("no token"), std::string::npos);
    EXPECT_NE(message("root ::= nothing").find("'nothing'"), std::string::npos);
    EXPECT_EQ(message("root ::= \"\""), "accepted");  // the empty text is a sentence: only the end may come
    EXPECT_EQ(cache.compiles(), 1u);  // refusals are not kept
}

TEST(GrammarCache, ConcurrentRequestsShareOneGrammar) {
    GrammarCache cache(letters());
    std::vector<std::thread> threads;
    std::vector<std::shared_ptr<const CompiledGrammar>> got(8);
    for (size_t i = 0; i < got.size(); ++i) {
        threads.emplace_back([&, i] { got[i] = cache.get("root ::= (\"a\" | \"b\")* \"c\"").value(); });
    }
    for (std::thread& thread : threads) thread.join();
    for (const auto& compiled : got) EXPECT_EQ(compiled, got[0]);
}

}  // namespace
}  // namespace tern::grammar
