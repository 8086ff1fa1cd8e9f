// The distance to a complete sentence, against a breadth-first search over the alphabet; and the shortest-path mask:
// every token it allows brings the end exactly its length closer. Random grammars over {a, b, c} with recursion,
// left recursion (stars), optional parts and bounded repetition.
#include <gtest/gtest.h>

#include <random>

#include "grammar/gbnf.h"
#include "grammar/token_masks.h"

namespace tern::grammar {
namespace {

std::string random_item(std::mt19937& rng, int rules, int depth) {
    static const char* atoms[] = {"\"a\"", "\"bc\"", "[a-b]", "\"\"", "\"c\"", "\"abc\""};
    static const char* suffixes[] = {"", "", "*", "+", "?", "{2}", "{1,3}"};
    const int kind = static_cast<int>(rng() % 10);
    std::string item;
    if (kind < 5) {
        item = atoms[rng() % 6];
    } else if (kind < 8) {
        item = "r" + std::to_string(rng() % rules);
    } else if (depth < 2) {
        item = "(" + random_item(rng, rules, depth + 1) + " " + random_item(rng, rules, depth + 1) + " | " +
               random_item(rng, rules, depth + 1) + ")";
    } else {
        item = "\"b\"";
    }
    return item + suffixes[rng() % 7];
}

std::string random_grammar(std::mt19937& rng) {
    const int rules = 1 + static_cast<int>(rng() % 3);
    std::string text = "root ::= r0\n";
    for (int r = 0; r < rules; ++r) {
        text += "r" + std::to_string(r) + " ::=";
        const int alternatives = 1 + static_cast<int>(rng() % 3);
        for (int a = 0; a < alternatives; ++a) {
            text += a ? " |" : "";
            const int items = 1 + static_cast<int>(rng() % 3);
            for (int i = 0; i < items; ++i) text += " " + random_item(rng, rules, 0);
        }
        text += "\n";
    }
    return text;
}

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
    int checked = 0, nonzero = 0;
    for (int g = 0; g < 150; ++g) {
        const std::string text = random_grammar(rng);
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
            for (int32_t id = 1; id < static_cast<int32_t>(vocabulary->size()); ++id) {
                if (!shortest.test(id)) continue;
                ASSERT_TRUE(matcher.accept_token(id)) << text;
                ASSERT_EQ(matcher.distance_to_end() + vocabulary->bytes(id).size(), distance) << text;
                matcher.rollback(1);
            }
            if (distance > 0 && distance != kNoCompletion) ASSERT_GT(shortest.count(), 0u) << text;
            // Move on by a random allowed token.
            TokenMask allowed;
            matcher.fill_next_token_mask(allowed);
            std::vector<int32_t> ids;
            for (int32_t id = 0; id < static_cast<int32_t>(vocabulary->size()); ++id) {
                if (allowed.test(id)) ids.push_back(id);
            }
            if (ids.empty()) break;
            const int32_t chosen = ids[rng() % ids.size()];
            ASSERT_TRUE(matcher.accept_token(chosen));
            ASSERT_TRUE(reference.accept_bytes(vocabulary->bytes(chosen)));
        }
    }
    EXPECT_GT(nonzero, checked / 4);
}

}  // namespace
}  // namespace tern::grammar
