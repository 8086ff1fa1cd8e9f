// The distance to a complete sentence, against a breadth-first search over the alphabet; and the shortest-path mask:
// every token it allows brings the end exactly its length closer. Random grammars over {a, b, c} with recursion,
// left recursion (stars), optional parts and bounded repetition.
#include <gtest/gtest.h>

#include <random>

#include "grammar/gbnf.h"
#include "grammar/token_masks.h"
#include "random_gbnf.h"

namespace tern::grammar {
namespace {

// Only {a, b, c}: the search below tries those bytes.
const testing::RandomGbnfShape kDistanceShape{
    .atoms = {"\"a\"", "\"bc\"", "[a-b]", "\"\"", "\"c\"", "\"abc\""},
    .suffixes = {"", "", "*", "+", "?", "{2}", "{1,3}", "{0,4}", "{2,5}"},
    .atom_share = 5, .rule_share = 8, .deepest = "\"b\"", .max_rules = 3, .min_items = 1, .item_span = 3};

// The fewest of {a, b, c} that complete the text from `matcher`, up to `limit`; limit + 1 when none within it.
uint32_t searched_distance(const Matcher& start, uint32_t limit) {
    std::vector<Matcher> level{start};
    for (uint32_t depth = 0; depth <= limit; ++depth) {
        std::vector<Matcher> next;
        for (const Matcher& matcher : level) {
            if (matcher.can_end()) return depth;
            for (char byte : std::string("abc")) {
                Matcher moved = matcher;
                if (moved.accept_byte(static_cast<uint8_t>(byte))) next.push_back(std::move(moved));
            }
        }
        if (next.size() > 20000) next.erase(next.begin() + 20000, next.end());
        level = std::move(next);
    }
    return limit + 1;
}

TEST(CompletionDistance, EqualsTheShortestCompletionFoundBySearch) {
    std::mt19937 rng(11);
    auto vocabulary = std::make_shared<TokenVocabulary>(
        std::vector<std::string>{"", "a", "b", "c", "ab", "bc", "ca", "abc", "cc", "bca", "aa"});
    int checked = 0, nonzero = 0, overloaded = 0;
    for (int g = 0; g < 150; ++g) {
        const std::string text = testing::random_grammar(rng, kDistanceShape);
        auto compiled = std::make_shared<CompiledGrammar>(parse_gbnf(text).value(), vocabulary);
        GrammarMatcher matcher(compiled);
        Matcher reference(compiled->grammar());
        for (int step = 0; step < 8; ++step) {
            const uint32_t distance = matcher.distance_to_end();
            const uint32_t searched = searched_distance(reference, 6);
            if (searched <= 6) {
                ASSERT_EQ(distance, searched) << text << "after " << step << " tokens";
            } else {
                ASSERT_GT(distance, 6u) << text;
            }
            ++checked;
            nonzero += distance > 0 && distance != kNoCompletion;
            // Every token of the shortest-path mask brings the end exactly its length closer.
            TokenMask shortest;
            matcher.fill_shortest_path_mask(shortest);
            bool gave_up = false;  // the grammar overloaded the matcher (GrammarMatcher::overloaded)
            for (int32_t id = 1; id < static_cast<int32_t>(vocabulary->size()) && !gave_up; ++id) {
                if (!shortest.test(id)) continue;
                gave_up = !matcher.accept_token(id);
                if (gave_up) break;
                ASSERT_EQ(matcher.distance_to_end() + vocabulary->bytes(id).size(), distance) << text;
                matcher.rollback(1);
            }
            if (!gave_up && distance > 0 && distance != kNoCompletion) ASSERT_GT(shortest.count(), 0u) << text;
            // Move on by a random allowed token.
            TokenMask allowed;
            if (!gave_up) matcher.fill_next_token_mask(allowed);
            if (gave_up || matcher.overloaded()) {
                ASSERT_TRUE(matcher.overloaded()) << text;
                ++overloaded;
                break;
            }
            std::vector<int32_t> ids;
            for (int32_t id = 0; id < static_cast<int32_t>(vocabulary->size()); ++id) {
                if (allowed.test(id)) ids.push_back(id);
            }
            if (ids.empty()) break;
            const int32_t chosen = ids[rng() % ids.size()];
            if (!matcher.accept_token(chosen)) {
                ASSERT_TRUE(matcher.overloaded()) << text;
                ++overloaded;
                break;
            }
            ASSERT_TRUE(reference.accept_bytes(vocabulary->bytes(chosen)));
        }
    }
    EXPECT_GT(nonzero, checked / 4);
    EXPECT_LE(overloaded, 8) << "of 150 random grammars overloaded the matcher";
}

}  // namespace
}  // namespace tern::grammar
