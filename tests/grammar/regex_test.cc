// Examples for regex_to_gbnf: each construct's language (through parse_gbnf and matches) and each refusal.
#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/regex_to_gbnf.h"

namespace tern::grammar {
namespace {

std::optional<Grammar> compile(std::string_view pattern, const RegexOptions& options = {}) {
    Result<std::string> gbnf = regex_to_gbnf(pattern, "root", options);
    if (!gbnf.is_ok()) {
        ADD_FAILURE() << "regex " << pattern << ": " << gbnf.status().message();
        return std::nullopt;
    }
    Result<Grammar> grammar = parse_gbnf(gbnf.value());
    if (!grammar.is_ok()) {
        ADD_FAILURE() << "regex " << pattern << " gave GBNF that does not parse: " << grammar.status().message() << "\n"
                      << gbnf.value();
        return std::nullopt;
    }
    return std::move(grammar).value();
}

void expect_language(std::string_view pattern, std::initializer_list<std::string_view> accepted,
                     std::initializer_list<std::string_view> rejected, const RegexOptions& options = {}) {
    const std::optional<Grammar> grammar = compile(pattern, options);
    if (!grammar) return;
    for (std::string_view text : accepted) EXPECT_TRUE(matches(*grammar, text)) << pattern << " should match " << text;
    for (std::string_view text : rejected)
        EXPECT_FALSE(matches(*grammar, text)) << pattern << " should not match " << text;
}

std::string error_of(std::string_view pattern, const RegexOptions& options = {}) {
    Result<std::string> gbnf = regex_to_gbnf(pattern, "root", options);
    if (gbnf.is_ok()) return "no error; GBNF: " + gbnf.value();
    EXPECT_EQ(gbnf.status().code(), StatusCode::kInvalidArgument);
    return gbnf.status().message();
}

const RegexOptions kJson{.json_string = true};

TEST(RegexToGbnf, LiteralsMatchExactlyTheWholeText) {
    expect_language("abc", {"abc"}, {"", "ab", "abcd", "abd", "xabc"});
    expect_language("", {""}, {"a", " "});
    expect_language("h\xc3\xa9llo \xe4\xb8\xad\xf0\x9f\x98\x80", {"h\xc3\xa9llo \xe4\xb8\xad\xf0\x9f\x98\x80"},
                    {"hello \xe4\xb8\xad\xf0\x9f\x98\x80", "h\xc3\xa9llo \xe4\xb8\xad"});
    expect_language("a\"b\\\\c]-\\^}", {"a\"b\\c]-^}"}, {"a\"b\\c]-^", "a\"b\\\\c]-^}"});
}

TEST(RegexToGbnf, LeadingCaretAndTrailingDollarAreIgnored) {
    expect_language("^abc$", {"abc"}, {"abc\n", "ab"});
    expect_language("^$", {""}, {"a"});
    expect_language("^a|b$", {"a", "b"}, {"ab"});
    expect_language("a\\$", {"a$"}, {"a"});
    expect_language("\\^a", {"^a"}, {"a"});
}

TEST(RegexToGbnf, CharacterEscapes) {
    expect_language("\\n\\r\\t\\f\\v\\a\\e", {"\n\r\t\f\v\a\x1b"}, {"nrtfvae"});
    expect_language("\\0", {std::string_view("\0", 1)}, {"0", ""});
    expect_language("\\012\\0101",
                    {"\n\x08"
                     "1"},
                    {"\nA"});  // \0 takes at most two more octal digits
    expect_language("\\x41\\x7e\\xA", {"A~\n"}, {"x41"});
    expect_language("\\x{1F600}\\x{e9}\\u00e9\\u{4e2d}\\uD83D\\uDE00",
                    {"\xf0\x9f\x98\x80\xc3\xa9\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80"}, {"\xf0\x9f\x98\x80"});
    expect_language("\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\\\/\\-\\\"\\ ", {".*+?()[]{}|^$\\/-\" "}, {""});
}

TEST(RegexToGbnf, DotIsAnyCodePointButNewline) {
    expect_language(".", {"a", "\r", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", std::string_view("\0", 1)},
                    {"\n", "", "ab", "\xed\xa0\x80" /* a surrogate is not UTF-8 */, "\xc3"});
    expect_language("a.c", {"abc", "a.c"}, {"a\nc", "ac"});
}

TEST(RegexToGbnf, ClassesRangesAndNegation) {
    expect_language("[a-cx]", {"a", "b", "c", "x"}, {"d", "", "ax", "-"});
    expect_language("[^a-c]", {"d", "\n", "\xc3\xa9", "\xf0\x9f\x98\x80"}, {"a", "c", "", "dd"});
    expect_language("[]a]", {"]", "a"}, {"[", "b"});
    expect_language("[^]a]", {"b"}, {"]", "a"});
    expect_language("[a-]", {"a", "-"}, {"b"});
    expect_language("[-a]", {"a", "-"}, {"b"});
    expect_language("[a\\-z]", {"a", "-", "z"}, {"b"});
    expect_language("[\\]\\\\^\"\\[]", {"]", "\\", "^", "\"", "["}, {"a"});
    expect_language("[a^]", {"a", "^"}, {"b"});
    expect_language("[\\x{e0}-\\x{ff}\\x{4e00}-\\x{9fff}]", {"\xc3\xa0", "\xc3\xbf", "\xe4\xb8\xad"},
                    {"\xc3\x9f", "a"});
    expect_language("[\\b]", {"\b"}, {"b"});
    expect_language("[\\n\\t]", {"\n", "\t"}, {"n", "t"});
    expect_language("[a-z-0]", {"a", "-", "0"}, {"1"});
    expect_language("[.*+?$|(){}]", {".", "*", "+", "?", "$", "|", "(", ")", "{", "}"}, {"a"});
}

TEST(RegexToGbnf, PosixClassesAndTheirEdges) {
    expect_language("[[:alpha:]_]", {"a", "Z", "_"}, {"1", "\xc3\xa9"});
    expect_language("[[:^digit:]]", {"a", "\xc3\xa9"}, {"5"});
    expect_language("[[:xdigit:][:space:]]", {"f", "F", "9", " ", "\t"}, {"g"});
    expect_language("[[:punct:]]", {"!", "/", "@", "[", "`", "~"}, {"a", " "});
    expect_language("[[:alpha]", {"[", ":", "a"}, {"b"});  // no ":]": an ordinary [ and letters
}

TEST(RegexToGbnf, ShorthandsHaveTheirAsciiMeanings) {
    expect_language("\\d", {"0", "9"}, {"a", "\xd9\xa3" /* Arabic-Indic three */});
    expect_language("\\w", {"a", "Z", "0", "_"}, {"-", "\xc3\xa9"});
    expect_language("\\s", {" ", "\t", "\n", "\v", "\f", "\r"}, {"a", "\xc2\xa0"});
    expect_language("\\D\\W\\S", {"a-x", "\xc3\xa9\xc3\xa9\xc3\xa9"}, {"1-x", "a_x", "a- "});
    expect_language("[\\d\\s]", {"5", " "}, {"a"});
    expect_language("[^\\d\\s]", {"a", "\xc3\xa9"}, {"5", " "});
    expect_language("[\\d-]", {"5", "-"}, {"a"});
    expect_language("[\\W\\d]", {"-", "5", "\xc3\xa9"}, {"a", "_"});
}

TEST(RegexToGbnf, GroupsOfEveryKind) {
    expect_language("(ab)+", {"ab", "abab"}, {"", "aba"});
    expect_language("(?:a|b)c", {"ac", "bc"}, {"c", "abc"});
    expect_language("(?<year>\\d{4})-(?P<month>\\d\\d)-(?'day'\\d\\d)", {"2024-01-31"}, {"2024-1-31"});
    expect_language("(?|a|b)", {"a", "b"}, {"ab"});
    expect_language("()", {""}, {"a"});
    expect_language("((((a))))", {"a"}, {""});
}

TEST(RegexToGbnf, Alternation) {
    expect_language("cat|dog|bird", {"cat", "dog", "bird"}, {"catdog", "ca", ""});
    expect_language("cat|", {"cat", ""}, {"c"});
    expect_language("|a|", {"", "a"}, {"aa"});
    expect_language("a(b|c|)d", {"abd", "acd", "ad"}, {"abcd"});
}

TEST(RegexToGbnf, Quantifiers) {
    expect_language("a*", {"", "a", "aaaa"}, {"b", "ab"});
    expect_language("a+", {"a", "aaaa"}, {"", "ab"});
    expect_language("a?b", {"b", "ab"}, {"aab"});
    expect_language("a{3}", {"aaa"}, {"aa", "aaaa"});
    expect_language("a{2,}", {"aa", "aaaaaa"}, {"a"});
    expect_language("a{2,4}", {"aa", "aaa", "aaaa"}, {"a", "aaaaa"});
    expect_language("a{0,3}", {"", "a", "aaa"}, {"aaaa"});
    expect_language("a{0}b", {"b"}, {"ab"});
    expect_language("(ab|c){1,2}", {"ab", "c", "abc", "cab", "cc"}, {"", "abcab"});
    expect_language("\\d{2,3}-[a-z]+", {"12-a", "123-abc"}, {"1-a", "1234-a", "12-"});
}

TEST(RegexToGbnf, LazyQuantifiersHaveTheSameLanguage) {
    expect_language("a*?b", {"b", "aab"}, {"a"});
    expect_language("a+?", {"a", "aa"}, {""});
    expect_language("a??a", {"a", "aa"}, {"aaa"});
    expect_language("a{2,3}?", {"aa", "aaa"}, {"a"});
    expect_language("a{2,}?", {"aa", "aaaa"}, {"a"});
}

// A repetition of something that can match nothing must not become a left-recursive (refused) or looping rule.
TEST(RegexToGbnf, RepeatedNullableItems) {
    expect_language("(a?)*", {"", "a", "aaa"}, {"b"});
    expect_language("(a*)+", {"", "a", "aaa"}, {"b"});
    expect_language("(a?b?)*c", {"c", "abc", "bac", "aabbc"}, {"cc"});
    expect_language("(a?b?c?){2}", {"", "abcabc", "cb", "cbc", "acac"}, {"cbcb", "aaa", "abcab c"});
    expect_language("(a*b+c?|d?){1,2}", {"", "bb", "abcab", "dd", "abd"}, {"ddd", "ac"});
    expect_language("(a|)+b", {"b", "aab"}, {"ba"});
    expect_language("()*x", {"x"}, {"xx"});
    expect_language("(a*b*){2,3}", {"", "ab", "abab", "bbaa", "ababab"}, {"abababa", "c"});
    expect_language("((a?){2}b?){3}", {"", "aaaaaa", "aabaabaab", "bbb"}, {"aaaaaaa", "bbbb"});
}

TEST(RegexToGbnf, BracesThatAreNoQuantifierAreLiterals) {
    expect_language("a{,3}", {"a{,3}"}, {"a", "aaa"});  // PCRE2 10.42 reads {,3} literally
    expect_language("a{x}", {"a{x}"}, {"a"});
    expect_language("x{2", {"x{2"}, {"xx"});
    expect_language("{", {"{"}, {""});
    expect_language("a{2,3", {"a{2,3"}, {"aa"});
}

TEST(RegexToGbnf, CountsUpToAThousand) {
    expect_language("a{1000}", {std::string(1000, 'a')}, {std::string(999, 'a'), std::string(1001, 'a')});
    expect_language("(ab){0,1000}", {"", "ab", "abab"}, {"a", "aba"});
    std::string many_ab;
    for (int copy_idx = 0; copy_idx < 1000; ++copy_idx) many_ab += "ab";
    expect_language("(ab){0,1000}", {many_ab}, {many_ab + "ab"});
    expect_language("[xy]{998,1000}", {std::string(999, 'x')}, {std::string(997, 'x'), std::string(1001, 'y')});
}

TEST(RegexToGbnf, RuleNamesLetSeveralConversionsShareAGrammar) {
    Result<std::string> digits = regex_to_gbnf("(\\d{3})+", "area-code");
    Result<std::string> word = regex_to_gbnf("(?:[a-z]+_?){2}", "word_2");
    ASSERT_TRUE(digits.is_ok() && word.is_ok());
    EXPECT_EQ(digits.value().rfind("area-code ::= ", 0), 0u) << digits.value();
    EXPECT_NE(digits.value().find("\narea-code-1 ::= "), std::string::npos) << digits.value();
    Result<Grammar> grammar = parse_gbnf("root ::= area-code \":\" word_2\n" + digits.value() + word.value());
    ASSERT_TRUE(grammar.is_ok()) << grammar.status().message();
    EXPECT_TRUE(matches(grammar.value(), "123456:ab_cd"));
    EXPECT_FALSE(matches(grammar.value(), "1234:ab_cd"));
    EXPECT_FALSE(matches(grammar.value(), "123:ab__cd"));
    EXPECT_NE(error_of("").find("no error"), std::string::npos);
    EXPECT_EQ(regex_to_gbnf("a", "my rule").status().message(),
              "regex: rule name 'my rule' must be one or more letters, digits, _ or -");
    EXPECT_FALSE(regex_to_gbnf("a", "").is_ok());
}

TEST(RegexToGbnf, MatchesPrefixFollowsTheRegex) {
    const std::optional<Grammar> grammar = compile("\\d{3}-[A-Z]{2}");
    ASSERT_TRUE(grammar);
    EXPECT_TRUE(matches_prefix(*grammar, "12"));
    EXPECT_TRUE(matches_prefix(*grammar, "123-A"));
    EXPECT_FALSE(matches_prefix(*grammar, "12a"));
    EXPECT_FALSE(matches_prefix(*grammar, "123-AB7"));
}

TEST(RegexToGbnfErrors, BackreferencesAndLookaround) {
    EXPECT_EQ(error_of("(a)b\\1"), "regex: backreferences are not supported (at offset 4)");
    EXPECT_EQ(error_of("(?<n>a)\\k<n>"), "regex: backreferences are not supported (at offset 7)");
    EXPECT_EQ(error_of("(?P<n>a)(?P=n)"), "regex: backreferences are not supported (at offset 8)");
    EXPECT_EQ(error_of("(a)\\g1"), "regex: backreferences are not supported (at offset 3)");
    EXPECT_EQ(error_of("a(?=b)"), "regex: lookahead is not supported (at offset 1)");
    EXPECT_EQ(error_of("a(?!b)"), "regex: lookahead is not supported (at offset 1)");
    EXPECT_EQ(error_of("(?<=a)b"), "regex: lookbehind is not supported (at offset 0)");
    EXPECT_EQ(error_of("(?<!a)b"), "regex: lookbehind is not supported (at offset 0)");
}

TEST(RegexToGbnfErrors, AnchorsAndBoundariesInside) {
    EXPECT_EQ(error_of("a^b"), "regex: ^ is only supported at the start of the pattern (at offset 1)");
    EXPECT_EQ(error_of("^^a"), "regex: ^ is only supported at the start of the pattern (at offset 1)");
    EXPECT_EQ(error_of("a$b"), "regex: $ is only supported at the end of the pattern (at offset 1)");
    EXPECT_EQ(error_of("(a$)"), "regex: $ is only supported at the end of the pattern (at offset 2)");
    EXPECT_EQ(error_of("a$$"), "regex: $ is only supported at the end of the pattern (at offset 1)");
    EXPECT_EQ(error_of("\\bfoo"), "regex: word boundaries \\b and \\B are not supported (at offset 0)");
    EXPECT_EQ(error_of("fo\\Bo"), "regex: word boundaries \\b and \\B are not supported (at offset 2)");
    EXPECT_EQ(error_of("\\Aa"),
              "regex: anchors other than a leading ^ and a trailing $ are not supported (at offset 0)");
    EXPECT_EQ(error_of("a\\z"),
              "regex: anchors other than a leading ^ and a trailing $ are not supported (at offset 1)");
}

TEST(RegexToGbnfErrors, FlagsAndOtherGroupKinds) {
    EXPECT_EQ(error_of("(?i)abc"), "regex: inline flags such as (?i) are not supported (at offset 0)");
    EXPECT_EQ(error_of("x(?i:abc)"), "regex: inline flags such as (?i) are not supported (at offset 1)");
    EXPECT_EQ(error_of("(?-s)a"), "regex: inline flags such as (?i) are not supported (at offset 0)");
    EXPECT_EQ(error_of("(?>a+)"),
              "regex: atomic groups are not supported: they can reject strings the plain group accepts (at offset 0)");
    EXPECT_EQ(error_of("(a(?R)?b)"), "regex: recursion and subroutine calls are not supported (at offset 2)");
    EXPECT_EQ(error_of("(a)(?1)"), "regex: recursion and subroutine calls are not supported (at offset 3)");
    EXPECT_EQ(error_of("(?(1)a|b)"), "regex: conditional groups are not supported (at offset 0)");
    EXPECT_EQ(error_of("(*UTF)a"), "regex: (*VERB) control verbs and options are not supported (at offset 0)");
    EXPECT_EQ(error_of("a(?#note)"), "regex: comments (?#...) are not supported (at offset 1)");
    EXPECT_EQ(error_of("(?<1a>x)"),
              "regex: invalid group name: expected letters, digits or _ and then > (at offset 3)");
    EXPECT_EQ(error_of("(?~a)"), "regex: unknown group syntax (?~ (at offset 0)");
}

TEST(RegexToGbnfErrors, UnbalancedParenthesesAndBrackets) {
    EXPECT_EQ(error_of("(ab"), "regex: unbalanced parenthesis: this ( is not closed (at offset 0)");
    EXPECT_EQ(error_of("a(b(c)"), "regex: unbalanced parenthesis: this ( is not closed (at offset 1)");
    EXPECT_EQ(error_of("ab)"), "regex: unbalanced parenthesis: ) without a matching ( (at offset 2)");
    EXPECT_EQ(error_of("x[ab"), "regex: unbalanced bracket: this [ is not closed (at offset 1)");
    EXPECT_EQ(error_of("[]"), "regex: unbalanced bracket: this [ is not closed (at offset 0)");
    EXPECT_EQ(error_of("[a-"), "regex: unbalanced bracket: this [ is not closed (at offset 0)");
    const std::string deep = std::string(300, '(') + std::string(300, ')');
    EXPECT_EQ(error_of(deep), "regex: groups are nested deeper than 200 (at offset 200)");
    expect_language(std::string(150, '(') + "a" + std::string(150, ')'), {"a"}, {""});
}

TEST(RegexToGbnfErrors, Quantifiers) {
    EXPECT_EQ(error_of("*a"), "regex: quantifier with nothing to repeat (at offset 0)");
    EXPECT_EQ(error_of("a|+b"), "regex: quantifier with nothing to repeat (at offset 2)");
    EXPECT_EQ(error_of("(?:?a)"), "regex: quantifier with nothing to repeat (at offset 3)");
    EXPECT_EQ(error_of("{2}"), "regex: quantifier with nothing to repeat (at offset 0)");
    EXPECT_EQ(error_of("^*"), "regex: quantifier with nothing to repeat (at offset 1)");
    EXPECT_EQ(error_of("a{3,2}"), "regex: {n,m} with n > m (at offset 1)");
    EXPECT_EQ(error_of("a{1001}"), "regex: repetition count 1001 is above the limit of 1000 (at offset 1)");
    EXPECT_EQ(error_of("a{2,99999999999}"),
              "regex: repetition count 99999999999 is above the limit of 1000 (at offset 1)");
    EXPECT_EQ(error_of("a**"),
              "regex: a quantifier cannot follow another quantifier (wrap the first in (?:...)) (at offset 2)");
    EXPECT_EQ(error_of("a{2}{3}"),
              "regex: a quantifier cannot follow another quantifier (wrap the first in (?:...)) (at offset 4)");
    EXPECT_EQ(error_of("a*?+"),
              "regex: a quantifier cannot follow another quantifier (wrap the first in (?:...)) (at offset 3)");
    EXPECT_EQ(error_of("a++a"),
              "regex: possessive quantifiers are not supported: they can reject strings the plain quantifier "
              "accepts (a++a matches nothing) (at offset 1)");
    EXPECT_NE(error_of("a{1,2}+").find("possessive quantifiers are not supported"), std::string::npos);
}

TEST(RegexToGbnfErrors, EscapesAndCharacters) {
    EXPECT_EQ(error_of("ab\\"), "regex: \\ at the end of the pattern (at offset 2)");
    EXPECT_EQ(error_of("\\p{L}"), "regex: Unicode properties \\p and \\P are not supported (at offset 0)");
    EXPECT_EQ(error_of("a\\h"), "regex: unknown escape \\h (at offset 1)");
    EXPECT_EQ(error_of("[\\q]"), "regex: unknown escape \\q (at offset 1)");
    EXPECT_EQ(error_of("\\xZ"), "regex: expected 1 hex digit (at offset 2)");
    EXPECT_EQ(error_of("\\u12"), "regex: expected 4 hex digits (at offset 2)");
    EXPECT_EQ(error_of("\\x{110000}"), "regex: code point above U+10FFFF (at offset 0)");
    EXPECT_EQ(error_of("\\x{12"), "regex: \\x{ needs hex digits and a closing } (at offset 0)");
    EXPECT_EQ(error_of("\\x{D800}"), "regex: surrogate code points (U+D800..U+DFFF) are not characters (at offset 0)");
    EXPECT_EQ(error_of("a\\uD800x"), "regex: a \\u surrogate must be a high one followed by a low one (at offset 1)");
    EXPECT_EQ(error_of("\\uDE00"), "regex: a \\u surrogate must be a high one followed by a low one (at offset 0)");
    EXPECT_EQ(error_of("ab\xff"), "regex: invalid UTF-8 (at offset 2)");
    EXPECT_EQ(error_of("\xc3"), "regex: invalid UTF-8 (at offset 0)");
    EXPECT_EQ(error_of("\xed\xa0\x80"), "regex: invalid UTF-8 (at offset 0)");  // an encoded surrogate
}

TEST(RegexToGbnfErrors, ClassesAndEmptyLanguages) {
    EXPECT_EQ(error_of("[z-a]"), "regex: invalid range in character class: the start is above the end (at offset 1)");
    EXPECT_EQ(error_of("[\\d-z]"),
              "regex: invalid range in character class: a class such as \\d cannot be an end of a range (at offset 1)");
    EXPECT_EQ(error_of("[a-\\w]"),
              "regex: invalid range in character class: a class such as \\d cannot be an end of a range (at offset 3)");
    EXPECT_EQ(error_of("[[:vowel:]]"), "regex: unknown POSIX class name [:vowel:] (at offset 1)");
    EXPECT_EQ(error_of("[[.a.]]"), "regex: POSIX collating elements are not supported (at offset 1)");
    EXPECT_EQ(error_of("[^\\x00-\\x{10FFFF}]"), "regex: the pattern matches no string");
    EXPECT_EQ(error_of("a[^\\d\\D]"), "regex: the pattern matches no string");
    // An empty class in one branch only removes that branch; under ? or * it matches nothing.
    expect_language("a|[^\\s\\S]", {"a"}, {""});
    expect_language("a[^\\s\\S]*", {"a"}, {"aa"});
}

TEST(RegexToGbnfJsonString, LiteralsThatJsonEscapesAreWrittenEscaped) {
    expect_language("a\"b", {"a\\\"b"}, {"a\"b", "ab"}, kJson);
    expect_language("\\\\d", {"\\\\d"}, {"\\d", "5"}, kJson);
    expect_language("x\\ny\\tz\\r\\x08\\f", {"x\\ny\\tz\\r\\b\\f"}, {"x\ny\tz\r\b\f"}, kJson);
    expect_language("\\x01\\x1F", {"\\u0001\\u001f", "\\u0001\\u001F"}, {"\x01\x1f", "\\u0001\\u001g"}, kJson);
    expect_language("\\x00", {"\\u0000"}, {std::string_view("\0", 1)}, kJson);
    expect_language("\"*", {"", "\\\"\\\"\\\""}, {"\\\"\\", "\"\""}, kJson);
    expect_language("\\x1b+", {"\\u001b\\u001B"}, {"\\u001"}, kJson);
}

TEST(RegexToGbnfJsonString, ClassesAndDotLeaveEscapedCharactersOut) {
    expect_language("[a\"\\\\\\n]", {"a"}, {"\"", "\\", "\n", "\\\"", "\\n"}, kJson);
    expect_language(".", {"a", "\xc3\xa9", "\x7f"}, {"\"", "\\", "\x01", "\t", "\\t"}, kJson);
    expect_language("[^a]+", {"bc", "'/"}, {"\"", "b\\c", "\x1f"}, kJson);
    expect_language("a|[\\n]", {"a"}, {"\\n", "\n"}, kJson);
    EXPECT_EQ(error_of("[\\x00-\\x1f]", kJson),
              "regex: the pattern matches no string once control characters, \" and \\ are left out of its classes "
              "(json_string mode)");
    expect_language("[\\x00-\\x1f]", {"\x01"}, {"a"});  // the same class is fine in plain mode
}

TEST(RegexToGbnfJsonString, SafePatternsGiveThePlainGrammar) {
    for (std::string_view pattern : {"[a-z]+@\\w+\\.(com|org)", "\\d{3}-\\d{4}", "(?:ab|c\xc3\xa9){2,}x?", "",
                                     "[\\x{20}-\\x{21}\\x{23}-\\x{5b}]*"}) {
        Result<std::string> plain = regex_to_gbnf(pattern, "root");
        Result<std::string> json = regex_to_gbnf(pattern, "root", kJson);
        ASSERT_TRUE(plain.is_ok() && json.is_ok()) << pattern;
        EXPECT_EQ(plain.value(), json.value()) << pattern;
    }
}

}  // namespace
}  // namespace tern::grammar

namespace tern::grammar {
namespace {

// Nested unbounded repetition is the same language as one repetition, and must be written as one: kept nested it
// is ambiguous in every split of the text, and the matcher's sets grow with the text (a hostile pattern's way to
// stall the engine).
TEST(RegexToGbnf, NestedUnboundedRepetitionCollapses) {
    const auto gbnf = [](std::string_view pattern) { return regex_to_gbnf(pattern, "root").value(); };
    EXPECT_EQ(gbnf("(\\D+)*"), gbnf("\\D*"));
    EXPECT_EQ(gbnf("((\\D{1,}){0,}?){2,}"), gbnf("\\D*"));
    EXPECT_EQ(gbnf("(?:ab+)+"), gbnf("(?:ab+)+"));  // not a repetition of a repetition: unchanged
    EXPECT_EQ(gbnf("(a+)+"), gbnf("a+"));
    EXPECT_EQ(gbnf("(a+){3,}"), gbnf("a{3,}"));
    EXPECT_NE(gbnf("(a{2,})*"), gbnf("a*"));  // runs of two or more: not any number of a's
}

}  // namespace
}  // namespace tern::grammar
