// The GBNF parser and the byte matcher. The randomized test checks the Earley matcher (prediction, completion, empty rules)
// against a different algorithm over the same Grammar: a fixpoint over "which ends can rule R reach from offset i",
// which shares no code with it.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "random_gbnf.h"

namespace tern::grammar {
namespace {

Grammar parse_or_die(std::string_view text) {
    Result<Grammar> grammar = parse_gbnf(text);
    EXPECT_TRUE(grammar.is_ok()) << grammar.status().message() << "\n" << text;
    return grammar.is_ok() ? std::move(grammar).value() : parse_gbnf("root ::= \"\"").value();
}

TEST(Gbnf, LiteralsAlternativesAndGroups) {
    const Grammar g = parse_or_die(R"(root ::= "ab" ("c" | "de")  # comment
        | "x")");
    EXPECT_TRUE(matches(g, "abc"));
    EXPECT_TRUE(matches(g, "abde"));
    EXPECT_TRUE(matches(g, "x"));
    EXPECT_FALSE(matches(g, "ab"));
    EXPECT_FALSE(matches(g, "abcd"));
    EXPECT_TRUE(matches_prefix(g, "ab"));
    EXPECT_FALSE(matches_prefix(g, "b"));
}

TEST(Gbnf, RepetitionCounts) {
    const Grammar g = parse_or_die(R"(root ::= "a"{2,4} "b"* "c"+ "d"? "e"{2,} "f"{,1} "g"{3})");
    EXPECT_TRUE(matches(g, "aacee" "ggg"));
    EXPECT_TRUE(matches(g, "aaaabbbcccdeeeefggg"));
    EXPECT_FALSE(matches(g, "acee" "ggg"));
    EXPECT_FALSE(matches(g, "aaaaacee" "ggg"));
    EXPECT_FALSE(matches(g, "aace" "ggg"));
    EXPECT_FALSE(matches(g, "aaceeffggg"));
    EXPECT_FALSE(matches(g, "aaceegggg"));
}

TEST(Gbnf, ClassesAreOverCodePointsSpelledInUtf8) {
    const Grammar g = parse_or_die(R"(root ::= [a-c\u00e9] [^a-z] . "\u20AC" [\U0001F600-\U0001F64F])");
    EXPECT_TRUE(matches(g, "aA\xf0\x9f\x98\x80\xe2\x82\xac\xf0\x9f\x98\x81"));
    EXPECT_TRUE(matches(g, "\xc3\xa9" "\xc3\xa9" "x" "\xe2\x82\xac" "\xf0\x9f\x99\x8f"));
    EXPECT_FALSE(matches(g, "aax\xe2\x82\xac\xf0\x9f\x98\x80"));
    // A lone continuation byte or a surrogate's spelling is not a character.
    EXPECT_FALSE(matches(g, "aA\x80\xe2\x82\xac\xf0\x9f\x98\x80"));
    EXPECT_FALSE(matches(g, "aA\xed\xa0\x80\xe2\x82\xac\xf0\x9f\x98\x80"));
}

TEST(Gbnf, RulesContinueOnTheNextLineUntilTheNextDefinition) {
    const Grammar g = parse_or_die("root ::= item\n  | item \",\" root\nitem ::= [0-9]+\n");
    EXPECT_TRUE(matches(g, "1,22,333"));
    EXPECT_FALSE(matches(g, "1,"));
}

TEST(Gbnf, ErrorsSayWhatAndWhere) {
    const auto error = [](std::string_view text) {
        Result<Grammar> g = parse_gbnf(text);
        return g.is_ok() ? std::string("accepted") : g.status().message();
    };
    EXPECT_EQ(error("root ::= item"), "grammar: rule 'item' is used by 'root' but not defined");
    EXPECT_EQ(error("item ::= \"a\""), "grammar: no rule named 'root' (the start rule)");
    EXPECT_EQ(error("root ::= \"a"), "grammar: unterminated string literal at line 1, column 12");
    EXPECT_EQ(error("root ::= [a-"), "grammar: unterminated character class at line 1, column 13");
    EXPECT_EQ(error("root ::= \"a\"{3,2}"), "grammar: repetition {3,2} has max below min at line 1, column 18");
    EXPECT_NE(error("root ::= \"a\"{20000}").find("above 10000"), std::string::npos);
    EXPECT_NE(error("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
    EXPECT_NE(error("root ::= \"a\"\nroot ::= \"b\"").find("defined twice"), std::string::npos);
    EXPECT_NE(error("root ::= ( \"a\" ").find("expected ')'"), std::string::npos);
    EXPECT_NE(error("root = \"a\"").find("expected '::='"), std::string::npos);
}

TEST(Gbnf, LeftRecursionAndAmbiguityAreFine) {
    const Grammar g = parse_or_die("root ::= root \"a\" | \"b\" | x\nx ::= (\"c\" | \"c\" | x x)+");
    EXPECT_TRUE(matches(g, "baaa"));
    EXPECT_TRUE(matches(g, std::string(60, 'c') + "aa"));
    EXPECT_FALSE(matches(g, "ab"));
}

TEST(Gbnf, LoopsThatReadNothingEnd) {
    // (x?)* and a rule that refers to itself in last position after an empty match must not hang the matcher.
    const Grammar g = parse_or_die("root ::= (\"a\"?)* \"b\"\nloop ::= \"\" loop | \"c\"");
    EXPECT_TRUE(matches(g, "aab"));
    EXPECT_TRUE(matches(g, "b"));
    EXPECT_FALSE(matches(g, "aa"));
}

// The oracle: ends[rule][i] = every j such that rule derives text[i, j).
class FixpointRecognizer {
public:
    FixpointRecognizer(const Grammar& grammar, std::string_view text)
        : grammar_(grammar), text_(text), ends_(grammar.rules().size(), std::vector<std::set<size_t>>(text.size() + 1)) {
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t rule = 0; rule < grammar.rules().size(); ++rule) {
                for (size_t i = 0; i <= text.size(); ++i) {
                    for (uint32_t alternative : grammar.rules()[rule].alternatives) {
                        for (size_t end : ends_of_alternative(alternative, i)) {
                            changed |= ends_[rule][i].insert(end).second;
                        }
                    }
                }
            }
        }
    }
    bool accepts() const { return ends_[0][0].count(text_.size()) > 0; }

private:
    std::set<size_t> ends_of_alternative(uint32_t position, size_t start) const {
        std::set<size_t> current{start};
        for (; grammar_.at(position).kind != Position::kEnd && !current.empty(); ++position) {
            std::set<size_t> next;
            for (size_t i : current) {
                if (grammar_.at(position).kind == Position::kRepeat) {
                    const std::set<size_t> ends = repeat_ends(grammar_.at(position), i);
                    next.insert(ends.begin(), ends.end());
                } else if (grammar_.at(position).kind == Position::kRule) {
                    const auto& ends = ends_[grammar_.at(position).index][i];
                    next.insert(ends.begin(), ends.end());
                } else if (i < text_.size() && grammar_.bytes_at(position)[static_cast<uint8_t>(text_[i])]) {
                    next.insert(i + 1);
                }
            }
            current = std::move(next);
        }
        return current;
    }

    // x{min,max} taken literally: the ends after exactly k copies, for k from min to max.
    std::set<size_t> repeat_ends(const Position& repeat, size_t start) const {
        std::set<size_t> after_k{start}, ends;
        for (uint32_t k = 0; k <= repeat.max && !after_k.empty(); ++k) {
            if (k >= repeat.min) ends.insert(after_k.begin(), after_k.end());
            std::set<size_t> next;
            for (size_t i : after_k) next.insert(ends_[repeat.index][i].begin(), ends_[repeat.index][i].end());
            after_k = std::move(next);
        }
        return ends;
    }

    const Grammar& grammar_;
    std::string_view text_;
    std::vector<std::vector<std::set<size_t>>> ends_;
};

// Grammars over {a, b, c} and every other byte ([^a]).
const testing::RandomGbnfShape kMatcherShape{
    .atoms = {"\"a\"", "\"b\"", "\"ab\"", "[a-b]", "[^a]", "\"\"", "\"c\""},
    .suffixes = {"", "", "", "*", "+", "?", "{2}", "{1,3}", "{,2}", "{0,4}", "{2,5}", "{6}", "{5,}"},
    .atom_share = 4, .rule_share = 7, .deepest = "\"c\"", .max_rules = 4, .min_items = 0, .item_span = 4};

TEST(GrammarMatcher, AgreesWithAFixpointRecognizerOnRandomGrammars) {
    std::mt19937 rng(20261204);
    int grammars = 0, accepted = 0, checked = 0;
    while (grammars < 300) {
        const std::string text = testing::random_grammar(rng, kMatcherShape);
        Result<Grammar> grammar = parse_gbnf(text);
        ASSERT_TRUE(grammar.is_ok()) << grammar.status().message() << "\n" << text;
        ++grammars;
        for (int s = 0; s < 40; ++s) {
            std::string input;
            const size_t length = rng() % 7;
            for (size_t i = 0; i < length; ++i) input += "abc"[rng() % 3];
            const bool expected = FixpointRecognizer(grammar.value(), input).accepts();
            ASSERT_EQ(matches(grammar.value(), input), expected) << text << "input: '" << input << "'";
            // Every prefix of an accepted text is a prefix the matcher keeps alive.
            if (expected) {
                for (size_t cut = 0; cut <= input.size(); ++cut) {
                    ASSERT_TRUE(matches_prefix(grammar.value(), input.substr(0, cut))) << text << input;
                }
            }
            accepted += expected;
            ++checked;
        }
    }
    // The generator must produce both outcomes often, or the comparison says little.
    EXPECT_GT(accepted, checked / 20);
    EXPECT_LT(accepted, checked - checked / 20);
}

}  // namespace
}  // namespace tern::grammar
