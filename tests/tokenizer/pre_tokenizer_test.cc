// Pre-tokenizer splits, and a check that the PCRE2 forms of the GPT-2 and Llama-3 patterns split exactly as
// llama.cpp's hand-written splitters for them do (unicode_regex_split_custom_gpt2 / _llama3).
#include <gtest/gtest.h>

#include <random>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"

namespace tern {
namespace {

using Words = std::vector<std::string>;

Words split(std::string_view pre, std::string_view text) {
    auto tokenizer = PreTokenizer::create(pre);
    TERN_CHECK(tokenizer.is_ok()) << tokenizer.status().message();
    return tokenizer.value().split(text);
}

TEST(PreTokenizerTest, Gpt2KeepsOneSpaceBeforeAWord) {
    EXPECT_EQ(split("gpt-2", "Hello world  !!\n"), (Words{"Hello", " world", " ", " !!", "\n"}));
    EXPECT_EQ(split("gpt-2", "a\n\nb"), (Words{"a", "\n", "\n", "b"}));
    EXPECT_EQ(split("gpt-2", "I'M I'm"), (Words{"I", "'", "M", " I", "'m"}));
}

TEST(PreTokenizerTest, Llama3FoldsContractionCaseAndGroupsDigits) {
    EXPECT_EQ(split("llama-bpe", "I'M 12345"), (Words{"I", "'M", " ", "123", "45"}));
    EXPECT_EQ(split("llama-bpe", "a   b"), (Words{"a", "  ", " b"}));
    EXPECT_EQ(split("llama-bpe", "x  \n\n y"), (Words{"x", "  \n\n", " y"}));
    EXPECT_EQ(split("qwen2", "12345"), (Words{"1", "2", "3", "4", "5"}));
}

TEST(PreTokenizerTest, RegexesApplyInSequenceKeepingGaps) {
    // falcon: punctuation runs first, then the GPT-2 split inside each piece, then digit triples.
    EXPECT_EQ(split("falcon", "ab...cd 12345"), (Words{"ab", "...", "cd", " ", "123", "45"}));
    // deepseek-coder: newlines, letters, punctuation, CJK, single digits; what no regex takes stays a piece.
    EXPECT_EQ(split("deepseek-coder", "ab 12\n日本"), (Words{"ab", " ", "1", "2", "\n", "日本"}));
}

TEST(PreTokenizerTest, DeepseekLlmLetterRangesIncludeGreekExtended) {
    // U+1F7D and U+1FBE end and make up ranges of the cased-letter class, so " \u1f7d\u1fbe" is one word
    // there; the later CJK regex, whose U+0800-U+4E00 range covers Greek Extended, then splits the space off.
    EXPECT_EQ(split("deepseek-llm", "Hello \u1f7d\u1fbe!! 42\n"),
              (Words{"Hello", " ", "\u1f7d\u1fbe", "!!", " ", "42", "\n"}));
    // The punctuation regex's range ":-~" spans the ASCII letters, so it cuts them out of mixed words.
    EXPECT_EQ(split("deepseek-llm", "Hello \u00e9t\u00e9!"), (Words{"Hello", " \u00e9", "t", "\u00e9", "!"}));
}

TEST(PreTokenizerTest, UnicodeClassesAndWhitespace) {
    // U+00A0 counts as whitespace (but is not the space " ?" allows before a word), "é" and "日" as letters,
    // "½" as a number.
    EXPECT_EQ(split("gpt-2", "\u00a0\u00a0é ½"), (Words{"\u00a0", "\u00a0", "é", " ½"}));
    EXPECT_EQ(split("gpt-2", "日本語"), (Words{"日本語"}));
    // Invalid bytes become U+FFFD before splitting, as in llama.cpp.
    EXPECT_EQ(split("gpt-2", "a\xFF"), (Words{"a", "\uFFFD"}));
}

TEST(PreTokenizerTest, EverySupportedNameCompilesAndCoversTheText) {
    const std::string text = "Hello, y'all! 3333 日本語 \u00e9t\u00e9  \n\t x\xFF";
    std::string names = supported_pre_tokenizers();
    for (size_t pos = 0; pos < names.size();) {
        const size_t comma = std::min(names.find(", ", pos), names.size());
        const std::string name = names.substr(pos, comma - pos);
        pos = comma + 2;
        auto pre = PreTokenizer::create(name);
        ASSERT_TRUE(pre.is_ok()) << name << ": " << pre.status().message();
        std::string joined;
        for (const std::string& word : pre.value().split(text)) {
            EXPECT_FALSE(word.empty()) << name;
            joined += word;
        }
        EXPECT_EQ(joined, "Hello, y'all! 3333 日本語 \u00e9t\u00e9  \n\t x\uFFFD") << name;
    }
}

TEST(PreTokenizerTest, UnknownNameListsSupportedOnes) {
    auto result = PreTokenizer::create("no-such-pre");
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("no-such-pre"), std::string::npos);
    EXPECT_NE(result.status().message().find("llama-bpe"), std::string::npos);
    EXPECT_NE(result.status().message().find("qwen2"), std::string::npos);
    EXPECT_EQ(find_pre_tokenizer("no-such-pre"), nullptr);
    ASSERT_NE(find_pre_tokenizer("qwen2"), nullptr);
    EXPECT_FALSE(find_pre_tokenizer("qwen2")->clean_spaces);
}

// A reference for llama.cpp's custom splitters, written from their logic, over code points.
class ReferenceSplitter {
public:
    enum Class { kLetter, kNumber, kSpace, kOther, kEnd };

    explicit ReferenceSplitter(std::string_view text)
        : cpts_(unicode::decode_utf8(text)),
          letter_(std::move(Regex::compile(R"(\p{L})")).value()),
          number_(std::move(Regex::compile(R"(\p{N})")).value()) {}

    Words gpt2() {
        for (size_t pos = 0; pos < cpts_.size();) {
            if (size_t length = contraction(pos, false)) {
                pos = add(pos, pos + length);
                continue;
            }
            const size_t start = at(pos) == ' ' ? pos + 1 : pos;
            const Class kind = classify(start);
            if (kind == kLetter || kind == kNumber || kind == kOther) {
                size_t end = start;
                while (classify(end) == kind) ++end;
                pos = add(pos, end);
                continue;
            }
            pos = add(pos, whitespace_end(pos, false));
        }
        return std::move(words_);
    }

    Words llama3() {
        for (size_t pos = 0; pos < cpts_.size();) {
            if (size_t length = contraction(pos, true)) {
                pos = add(pos, pos + length);
                continue;
            }
            const uint32_t cpt = at(pos);
            if (cpt != '\r' && cpt != '\n' && classify(pos) != kNumber &&
                (classify(pos) == kLetter || classify(pos + 1) == kLetter)) {
                size_t end = pos + 1;
                while (classify(end) == kLetter) ++end;
                pos = add(pos, end);
                continue;
            }
            if (classify(pos) == kNumber) {
                while (classify(pos) == kNumber) {
                    size_t end = pos;
                    while (end < pos + 3 && classify(end) == kNumber) ++end;
                    pos = add(pos, end);
                }
                continue;
            }
            const size_t start = cpt == ' ' ? pos + 1 : pos;
            if (classify(start) == kOther || classify(start) == kEnd) {
                size_t end = start;
                while (classify(end) == kOther) ++end;
                while (at(end) == '\r' || at(end) == '\n') ++end;
                pos = add(pos, end);
                continue;
            }
            pos = add(pos, whitespace_end(pos, true));
        }
        return std::move(words_);
    }

private:
    uint32_t at(size_t pos) const { return pos < cpts_.size() ? cpts_[pos] : 0xFFFFFFFF; }

    Class classify(size_t pos) const {
        if (pos >= cpts_.size()) return kEnd;
        const uint32_t cpt = cpts_[pos];
        if (unicode::is_whitespace(cpt)) return kSpace;
        std::string utf8;
        unicode::append_utf8(cpt >= 0xD800 && cpt <= 0xDFFF ? 0xE000 : cpt, utf8);
        bool found = false;
        letter_.for_each_match(utf8, [&](size_t, size_t) { found = true; });
        if (found) return kLetter;
        number_.for_each_match(utf8, [&](size_t, size_t) { found = true; });
        return found ? kNumber : kOther;
    }

    size_t contraction(size_t pos, bool fold_case) const {
        if (at(pos) != '\'' || pos + 1 >= cpts_.size()) return 0;
        auto lower = [&](uint32_t c) { return fold_case && c >= 'A' && c <= 'Z' ? c + 32 : c; };
        const uint32_t next = lower(at(pos + 1));
        if (next == 's' || next == 't' || next == 'm' || next == 'd') return 2;
        if (pos + 2 >= cpts_.size()) return 0;
        const uint32_t after = lower(at(pos + 2));
        const bool two = (next == 'r' && after == 'e') || (next == 'v' && after == 'e') || (next == 'l' && after == 'l');
        return two ? 3 : 0;
    }

    // \s*[\r\n]+ (Llama 3 only), then \s+(?!\S), then \s+; a lone non-space becomes its own piece.
    size_t whitespace_end(size_t pos, bool newline_rule) const {
        size_t end = pos;
        size_t after_newline = 0;
        while (classify(end) == kSpace) {
            if (at(end) == '\r' || at(end) == '\n') after_newline = end + 1;
            ++end;
        }
        if (newline_rule && after_newline > 0) return after_newline;
        if (end - pos > 1 && end < cpts_.size()) return end - 1;
        return end > pos ? end : pos + 1;
    }

    size_t add(size_t begin, size_t end) {
        std::string word;
        for (size_t i = begin; i < end; ++i) unicode::append_utf8(cpts_[i], word);
        words_.push_back(std::move(word));
        return end;
    }

    std::vector<uint32_t> cpts_;
    Regex letter_;
    Regex number_;
    Words words_;
};

TEST(PreTokenizerTest, PatternsSplitLikeLlamaCppCustomSplitters) {
    const std::vector<std::string> alphabet = {
        "a", "Z", "s", "S", "t", "r", "e", "E", "v", "l", "L", "d", "m", "'", " ", " ", "  ", "\t", "\n", "\r",
        "\v", "0", "7", "½", "٣", "é", "ß", "日", "ア", "😀", "!", ".", "-", "_", "\u00a0", "\u2003", "\u3000",
        "\u0085", "\u0301", "\u200b", "\u2028", "\U000E0001", "\xED\xA0\x80", "\xFF", "\xC3",
    };
    const PreTokenizer gpt2 = std::move(PreTokenizer::create("gpt-2")).value();
    const PreTokenizer llama3 = std::move(PreTokenizer::create("llama-bpe")).value();
    std::mt19937 rng(42);
    for (int round = 0; round < 3000; ++round) {
        std::string text;
        const int length = 1 + static_cast<int>(rng() % 16);
        for (int i = 0; i < length; ++i) text += alphabet[rng() % alphabet.size()];
        ASSERT_EQ(gpt2.split(text), ReferenceSplitter(text).gpt2()) << "gpt-2, round " << round;
        ASSERT_EQ(llama3.split(text), ReferenceSplitter(text).llama3()) << "llama3, round " << round;
    }
}

}  // namespace
}  // namespace tern
