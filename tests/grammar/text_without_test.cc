// Text without a marker, as a grammar: every short string over the marker's bytes and one other, against find().
#include <gtest/gtest.h>

#include <random>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/text_without_gbnf.h"

namespace tern::grammar {
namespace {

// Random texts made of the marker's beginnings, the marker, its bytes and another byte.
TEST(TextWithout, MatchesExactlyTheTextsWithoutTheMarker) {
    std::mt19937 rng(20261204);
    for (const std::string marker : {"</think>", "<a>", "[/T]", "x"}) {
        Result<std::string> rules = text_without_gbnf(marker, "free");
        ASSERT_TRUE(rules.is_ok()) << rules.status().message();
        // Followed by the marker itself, as reasoning uses it.
        const std::string text = "root ::= free " + gbnf_literal(marker) + "\n" + rules.value();
        Result<Grammar> grammar = parse_gbnf(text);
        ASSERT_TRUE(grammar.is_ok()) << grammar.status().message() << "\n" << text;
        std::vector<std::string> pieces = {"q", marker};
        for (size_t length = 1; length < marker.size(); ++length) pieces.push_back(marker.substr(0, length));
        for (char c : marker) pieces.emplace_back(1, c);
        int with = 0, without = 0;
        for (int round = 0; round < 3000; ++round) {
            std::string free;
            for (int n = static_cast<int>(rng() % 7); n > 0; --n) free += pieces[rng() % pieces.size()];
            const bool expected = free.find(marker) == std::string::npos;
            ASSERT_EQ(matches(grammar.value(), free + marker), expected) << marker << ": '" << free << "'";
            (expected ? without : with) += 1;
        }
        EXPECT_GT(with, 300);
        EXPECT_GT(without, 300);
    }
}

TEST(TextWithout, RefusesAMarkerWhoseFirstByteComesAgain) {
    EXPECT_FALSE(text_without_gbnf("abab", "free").is_ok());
    EXPECT_FALSE(text_without_gbnf("", "free").is_ok());
}

}  // namespace
}  // namespace tern::grammar
