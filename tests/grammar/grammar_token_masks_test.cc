// Token masks against the plain answer: for every token, does the matcher take its bytes from here? Random grammars
// (recursion, ambiguity, UTF-8 classes) and random vocabularies whose tokens cross rule boundaries, so that the
// precomputed "accepted whatever the context" sets and the uncertain tokens checked live are both exercised.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
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
// whose bytes the plain matcher takes; every fifth step also goes back one token and forward again. Returns whether
// the grammar overloaded the matcher on the way (a few random grammars are that ambiguous), which ends the walk.
bool expect_masks_equal_the_matcher(const std::string& text, int steps, std::mt19937& rng, size_t tokens) {
    Result<Grammar> parsed = parse_gbnf(text);
    EXPECT_TRUE(parsed.is_ok()) << parsed.status().message() << "\n" << text;
    if (!parsed.is_ok()) return false;
    const Grammar grammar = parsed.value();
    auto vocabulary = random_vocabulary(rng, tokens);
    auto compiled = std::make_shared<CompiledGrammar>(grammar, vocabulary);
    GrammarMatcher matcher(compiled);
    Matcher reference(grammar);
    TokenMask mask;
    for (int step = 0; step < steps; ++step) {
        matcher.fill_next_token_mask(mask);
        if (matcher.overloaded()) return true;
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < static_cast<int32_t>(vocabulary->size()); ++id) {
            Matcher probe = reference;
            const bool expected = !vocabulary->bytes(id).empty() && probe.accept_bytes(vocabulary->bytes(id));
            EXPECT_EQ(mask.test(id), expected)
                << text << "\nstep " << step << " token '" << vocabulary->bytes(id) << "'";
            if (mask.test(id) != expected) return false;
            if (expected) allowed.push_back(id);
        }
        EXPECT_EQ(matcher.can_end(), reference.can_end());
        if (allowed.empty()) break;
        const int32_t chosen = allowed[rng() % allowed.size()];
        if (!matcher.accept_token(chosen)) {
            EXPECT_TRUE(matcher.overloaded()) << text;
            return true;
        }
        EXPECT_TRUE(reference.accept_bytes(vocabulary->bytes(chosen)));
        if (step % 5 == 4) {
            matcher.rollback(1);
            if (!matcher.accept_token(chosen)) return matcher.overloaded();
        }
    }
    return false;
}

TEST(TokenMasks, EqualTheMatcherTokenByToken) {
    std::mt19937 rng(7);
    for (const char* text : kGrammars) {
        for (int round = 0; round < 4; ++round) EXPECT_FALSE(expect_masks_equal_the_matcher(text, 30, rng, 400));
    }
}

// Random grammars over the test pieces' bytes, every repetition operator included.
const testing::RandomGbnfShape kMaskShape{
    .atoms = {"\"a\"", "\"b\"", "\"ab\"", "[a-c]", "\"(\"", "\")\"", "[xy]", "\"\"", "\"}\""},
    .suffixes = {"", "", "", "*", "+", "?", "{2}", "{1,3}", "{0,4}", "{2,6}", "{5,}"},
    .atom_share = 5, .rule_share = 7, .deepest = "\"x\"", .max_rules = 4, .min_items = 1, .item_span = 3};

TEST(TokenMasks, EqualTheMatcherOnRandomGrammars) {
    std::mt19937 rng(20261204);
    int overloaded = 0;
    for (int g = 0; g < 120; ++g) {
        overloaded += expect_masks_equal_the_matcher(testing::random_grammar(rng, kMaskShape), 12, rng, 200) ? 1 : 0;
    }
    EXPECT_LE(overloaded, 6) << "of 120 random grammars overloaded the matcher";
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

namespace tern::grammar {
namespace {

// An ambiguous grammar costs the square of the text's length per byte; a request under one ends once a byte needs
// more parser work than a request may use (GrammarMatcher::overloaded), well before it would hold up an engine.
// A sane grammar's byte costs the same however long the text: it never ends that way.
TEST(TokenMasks, AHostileAmbiguousGrammarOverloadsASaneOneDoesNot) {
    const auto vocabulary = std::make_shared<TokenVocabulary>(std::vector<std::string>{"a", "b", "ab", "ba", "aab",
                                                                                       ",1", "[", "]", "1"});
    const auto run = [&](const char* text, int max_tokens, const std::function<int32_t(int)>& token_at) {
        auto compiled = std::make_shared<CompiledGrammar>(parse_gbnf(text).value(), vocabulary);
        GrammarMatcher matcher(compiled);
        TokenMask mask;
        for (int step = 0; step < max_tokens; ++step) {
            matcher.fill_next_token_mask(mask);
            if (matcher.overloaded()) return step;
            const int32_t token = token_at(step);
            EXPECT_TRUE(mask.test(token)) << step;
            if (!matcher.accept_token(token)) {
                EXPECT_TRUE(matcher.overloaded()) << "refused at step " << step;
                return step;
            }
        }
        return max_tokens;
    };
    const auto started = std::chrono::steady_clock::now();
    const int hostile = run(R"(root ::= root root | "a" | "b")", 5000, [](int step) { return 2 + step % 3; });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_LT(hostile, 5000) << "never overloaded";
    EXPECT_GT(hostile, 50) << "a short text is fine even under this grammar";
    EXPECT_LT(seconds, 20.0);
    // "[", then ",1" again and again.
    EXPECT_EQ(run(R"(root ::= "[" (",1")* "]")", 4000, [](int step) { return step == 0 ? 6 : 5; }), 4000);
}

}  // namespace
}  // namespace tern::grammar
