// Token masks against the plain answer: for every token, does the matcher take its bytes from here? Random grammars
// (recursion, ambiguity, UTF-8 classes) and random vocabularies whose tokens cross rule boundaries, so that the
// precomputed "accepted whatever the context" sets and the uncertain tokens checked live are both exercised.
#include <gtest/gtest.h>

#include <random>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/token_masks.h"
#include "random_gbnf.h"

namespace tern::grammar {
namespace {

std::shared_ptr<const TokenVocabulary> random_vocabulary(std::mt19937& rng, size_t tokens) {
    static const std::vector<std::string> pieces = {"a", "b", "c", "{", "}", "\"", ",", " ", "\xc3\xa9", "\xc3", "\xa9",
                                                    "ab", "\"a", "}}", ", ", "(", ")", "<", ">", "x", "y",
                                                    ")>", "))", "y)", "x)"};
    std::vector<std::string> bytes;
    bytes.push_back("");  // a control token: no bytes, never allowed
    for (size_t i = 1; i < tokens; ++i) {
        std::string token;
        const size_t parts = 1 + rng() % 4;
        for (size_t p = 0; p < parts; ++p) token += pieces[rng() % pieces.size()];
        bytes.push_back(token);
    }
    return std::make_shared<TokenVocabulary>(std::move(bytes));
}

const char* const kGrammars[] = {
    R"(root ::= "{" ws (pair ("," ws pair)*)? ws "}"
       pair ::= "\"" [a-c]* "\"" ws ":" ws value
       value ::= "\"" ([^"\\] | "\\" ["\\])* "\"" | [0-9]+ | root
       ws ::= " "?)",
    R"(root ::= (x | y)+
       x ::= "ab" | "a" "b" c?
       y ::= [b-c\u00e9]{1,3} "}"
       c ::= "," | "\"")",
    R"(root ::= root "a" | "b" inner | "\u00e9"
       inner ::= ("\"" "a"* "\"")*)",
    R"(root ::= "{" "}"{2,} | "{" root "}" | [ ,]*)",
    // A rule nested in itself (not at its start) beside a left-recursive repetition: an inner occurrence returns
    // into the outer one, not into the rule's caller.
    R"g(root ::= "<" item ">" | "ab"
        item ::= "(" item ")" | item "y" | "x")g",
    // Counted repetitions (one position with a count): one character rule repeated with two bounds and also
    // unbounded, so that tokens cross the bound, the element's end and the repetition's end.
    R"(root ::= "{" ("\"" ch{0,6} "\"" | "<" ch{1,3} ">" | ch*) "}"
       ch ::= [a-c] | "\u00e9" | "\\" ["\\] )",
    R"g(root ::= ("(" [ab]{0,3} ")"){0,4} "." | "x"{2,5} y{1,3}
        y ::= "y"{0,2} ")")g",
    R"(root ::= ("a"? "b"?){2,5} "x" | ("a" | "ab" | "b"){1,4} "}")",
};

// Walks `steps` random tokens through the grammar, checking at each step that the mask holds exactly the tokens
// whose bytes the plain matcher takes; every fifth step also goes back one token and forward again.
void expect_masks_equal_the_matcher(const std::string& text, int steps, std::mt19937& rng, size_t tokens) {
    Result<Grammar> parsed = parse_gbnf(text);
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message() << "\n" << text;
    const Grammar grammar = parsed.value();
    auto vocabulary = random_vocabulary(rng, tokens);
    auto compiled = std::make_shared<CompiledGrammar>(grammar, vocabulary);
    GrammarMatcher matcher(compiled);
    Matcher reference(grammar);
    TokenMask mask;
    for (int step = 0; step < steps; ++step) {
        matcher.fill_next_token_mask(mask);
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < static_cast<int32_t>(vocabulary->size()); ++id) {
            Matcher probe = reference;
            const bool expected = !vocabulary->bytes(id).empty() && probe.accept_bytes(vocabulary->bytes(id));
            ASSERT_EQ(mask.test(id), expected) << text << "\nstep " << step << " token '" << vocabulary->bytes(id) << "'";
            if (expected) allowed.push_back(id);
        }
        ASSERT_EQ(matcher.can_end(), reference.can_end());
        if (allowed.empty()) break;
        const int32_t chosen = allowed[rng() % allowed.size()];
        ASSERT_TRUE(matcher.accept_token(chosen));
        ASSERT_TRUE(reference.accept_bytes(vocabulary->bytes(chosen)));
        if (step % 5 == 4) {
            matcher.rollback(1);
            ASSERT_TRUE(matcher.accept_token(chosen));
        }
    }
}

TEST(TokenMasks, EqualTheMatcherTokenByToken) {
    std::mt19937 rng(7);
    for (const char* text : kGrammars) {
        for (int round = 0; round < 4; ++round) expect_masks_equal_the_matcher(text, 30, rng, 400);
    }
}

// Random grammars over the test pieces' bytes, every repetition operator included.
const testing::RandomGbnfShape kMaskShape{
    .atoms = {"\"a\"", "\"b\"", "\"ab\"", "[a-c]", "\"(\"", "\")\"", "[xy]", "\"\"", "\"}\""},
    .suffixes = {"", "", "", "*", "+", "?", "{2}", "{1,3}", "{0,4}", "{2,6}", "{5,}"},
    .atom_share = 5, .rule_share = 7, .deepest = "\"x\"", .max_rules = 4, .min_items = 1, .item_span = 3};

TEST(TokenMasks, EqualTheMatcherOnRandomGrammars) {
    std::mt19937 rng(20261204);
    for (int g = 0; g < 120; ++g) expect_masks_equal_the_matcher(testing::random_grammar(rng, kMaskShape), 12, rng, 200);
}

TEST(TokenMasks, RefusedTokensLeaveTheMatcherAsItWas) {
    auto vocabulary = std::make_shared<TokenVocabulary>(std::vector<std::string>{"", "a", "b", "ab", "ba"});
    auto compiled = std::make_shared<CompiledGrammar>(parse_gbnf(R"(root ::= "a"+ "b")").value(), vocabulary);
    GrammarMatcher matcher(compiled);
    EXPECT_FALSE(matcher.accept_token(0));  // no bytes
    EXPECT_FALSE(matcher.accept_token(4));  // "ba"
    EXPECT_TRUE(matcher.accept_token(1));
    EXPECT_FALSE(matcher.can_end());
    EXPECT_TRUE(matcher.accept_token(3));  // "ab"
    EXPECT_TRUE(matcher.can_end());
    EXPECT_TRUE(matcher.must_end());
    matcher.rollback(2);
    EXPECT_EQ(matcher.tokens_accepted(), 0u);
    EXPECT_TRUE(matcher.accept_token(3));
    EXPECT_TRUE(matcher.can_end());
}

}  // namespace
}  // namespace tern::grammar
