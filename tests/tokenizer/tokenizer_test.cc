// Encoding and decoding with the in-memory vocabularies of test_vocabs.h.
#include <gtest/gtest.h>

#include <random>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/test_vocabs.h"

namespace tern {
namespace {

std::unique_ptr<Tokenizer> make(VocabData data) {
    auto tokenizer = Tokenizer::create(std::move(data));
    TERN_CHECK(tokenizer.is_ok()) << tokenizer.status().message();
    return std::move(tokenizer).value();
}

class SpmTokenizerTest : public ::testing::Test {
protected:
    int32_t id(std::string_view text) const { return tokenizer_->find_token(text).value_or(-100); }
    int32_t byte(uint8_t value) const { return 3 + value; }

    std::unique_ptr<Tokenizer> tokenizer_ = make(testing::make_spm_vocab());
};

// " hello world" -> "▁hello▁world"; the best-scoring pairs merge first: ll, he, hell, hello, ▁hello, ▁w, or, ld,
// ▁wor, ▁world.
TEST_F(SpmTokenizerTest, MergesByScoreWithSpacePrefix) {
    EXPECT_EQ(tokenizer_->encode("hello world", false, false),
              (std::vector<int32_t>{id("\u2581hello"), id("\u2581world")}));
    EXPECT_EQ(tokenizer_->encode("hello world", true, false),
              (std::vector<int32_t>{1, id("\u2581hello"), id("\u2581world")}));
}

TEST_F(SpmTokenizerTest, FallsBackToByteTokens) {
    // No "i" piece and no "▁h" merge: "▁", "h", then the byte 'i'.
    EXPECT_EQ(tokenizer_->encode("hi", false, false), (std::vector<int32_t>{id("\u2581"), id("h"), byte('i')}));
    // "€" is three bytes, none of them a piece.
    EXPECT_EQ(tokenizer_->encode("€", false, false), (std::vector<int32_t>{id("\u2581"), byte(0xE2), byte(0x82), byte(0xAC)}));
    // A truncated character is spelled byte by byte too.
    EXPECT_EQ(tokenizer_->encode("\xC3", false, false), (std::vector<int32_t>{id("\u2581"), byte(0xC3)}));
}

TEST_F(SpmTokenizerTest, ParsesControlTokensOnlyWhenAsked) {
    const std::vector<int32_t> parsed = tokenizer_->encode("hello<s>hello", false, true);
    // The space prefix comes back after a special token, as in llama.cpp.
    EXPECT_EQ(parsed, (std::vector<int32_t>{id("\u2581hello"), 1, id("\u2581hello")}));
    const std::vector<int32_t> plain = tokenizer_->encode("hello<s>hello", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
    EXPECT_EQ(plain.front(), id("\u2581hello"));
    EXPECT_EQ(plain[1], byte('<'));
}

TEST_F(SpmTokenizerTest, MatchesUserDefinedTokensAlways) {
    for (bool parse_special : {false, true}) {
        EXPECT_EQ(tokenizer_->encode("<tool>hello", false, parse_special),
                  (std::vector<int32_t>{id("<tool>"), id("\u2581hello")}));
    }
}

TEST_F(SpmTokenizerTest, DecodeFollowsLlamaCppSpaceRules) {
    const std::vector<int32_t> ids = {id("\u2581hello"), id("\u2581world")};
    EXPECT_EQ(tokenizer_->decode(ids), "hello world");
    // After a BOS llama.cpp keeps the first piece's space, whether or not the BOS is removed.
    const std::vector<int32_t> with_bos = {1, id("\u2581hello")};
    EXPECT_EQ(tokenizer_->decode(with_bos), " hello");
    EXPECT_EQ(tokenizer_->decode(with_bos, /*remove_special=*/true), " hello");
    EXPECT_EQ(tokenizer_->decode(with_bos, false, /*render_special=*/true), "<s> hello");
    EXPECT_EQ(tokenizer_->decode(std::vector<int32_t>{byte(0xC3), byte(0xA9)}), "\u00e9");
    EXPECT_EQ(tokenizer_->decode(std::vector<int32_t>{-1, 100000, id("h")}), "h");
}

TEST_F(SpmTokenizerTest, RoundTripsText) {
    for (std::string text : {"hello world", "héllo  wörld\n\ttabs", "日本語 and emoji 😀", "  leading"}) {
        EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text, false, false)), text);
        EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text, true, false), true), " " + text);
    }
    // The prefix space after a special token shows in the decoded text, as in llama.cpp.
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode("<tool>x", false, false)), "<tool> x");
}

TEST_F(SpmTokenizerTest, ReportsVocabularyFacts) {
    EXPECT_EQ(tokenizer_->kind(), VocabKind::kSpm);
    EXPECT_EQ(tokenizer_->bos_id(), 1);
    EXPECT_EQ(tokenizer_->eos_id(), 2);
    EXPECT_TRUE(tokenizer_->add_bos());
    EXPECT_TRUE(tokenizer_->is_end_of_generation(2));
    EXPECT_FALSE(tokenizer_->is_end_of_generation(1));
    EXPECT_EQ(tokenizer_->token_to_piece(id("\u2581hello")), " hello");
    EXPECT_EQ(tokenizer_->token_to_piece(1), "");
    EXPECT_EQ(tokenizer_->token_to_piece(1, true), "<s>");
    EXPECT_EQ(tokenizer_->token_to_piece(byte('A')), "A");
}

class BpeTokenizerTest : public ::testing::Test {
protected:
    int32_t id(std::string_view text) const { return tokenizer_->find_token(text).value_or(-100); }

    std::unique_ptr<Tokenizer> tokenizer_ = make(testing::make_bpe_vocab("qwen2"));
};

// "hello": he (rank 0), ll (1), he+ll (4), hell+o (5). "Ġworld": Ġw (6), or (7), Ġw+or (8), ld (9), Ġwor+ld (10).
TEST_F(BpeTokenizerTest, MergesByRank) {
    EXPECT_EQ(tokenizer_->encode("hello world", false, false), (std::vector<int32_t>{id("hello"), id("Ġworld")}));
    // This vocabulary asks for no BOS, so add_special adds nothing.
    EXPECT_EQ(tokenizer_->encode("hello world", true, false), (std::vector<int32_t>{id("hello"), id("Ġworld")}));
    // Without a merge the word stays in single bytes.
    EXPECT_EQ(tokenizer_->encode("xyz", false, false), (std::vector<int32_t>{'x', 'y', 'z'}));
}

TEST(BpeAddSpecialTest, AddsBosAndEosAsAsked) {
    VocabData vocab = testing::make_bpe_vocab("qwen2");
    vocab.add_bos = true;
    vocab.add_eos = true;
    vocab.eos_id = vocab.bos_id + 1;
    auto tokenizer = make(std::move(vocab));
    const int32_t hello = tokenizer->find_token("hello").value();
    EXPECT_EQ(tokenizer->encode("hello", true, false),
              (std::vector<int32_t>{tokenizer->bos_id(), hello, tokenizer->eos_id()}));
    EXPECT_EQ(tokenizer->encode("hello", false, false), (std::vector<int32_t>{hello}));
    EXPECT_EQ(tokenizer->encode("", true, false), (std::vector<int32_t>{tokenizer->bos_id(), tokenizer->eos_id()}));
    EXPECT_EQ(tokenizer->decode(tokenizer->encode("hello", true, false), /*remove_special=*/true), "hello");
}

TEST(BpeRankTest, LowerRankWins) {
    for (const bool ab_first : {true, false}) {
        VocabData vocab = testing::make_bpe_vocab("gpt-2");
        vocab.merges = ab_first ? std::vector<std::string>{"a b", "b c"} : std::vector<std::string>{"b c", "a b"};
        for (const char* token : {"ab", "bc"}) {
            vocab.tokens.push_back(token);
            vocab.token_types.push_back(TokenType::kNormal);
        }
        auto tokenizer = make(std::move(vocab));
        const int32_t ab = tokenizer->find_token("ab").value();
        const int32_t bc = tokenizer->find_token("bc").value();
        EXPECT_EQ(tokenizer->encode("abc", false, false),
                  ab_first ? std::vector<int32_t>({ab, 'c'}) : std::vector<int32_t>({'a', bc}));
    }
}

TEST(BpeIgnoreMergesTest, WholeWordTokensSkipMergesForLlama3) {
    auto llama3 = make(testing::make_bpe_vocab("llama-bpe"));
    EXPECT_EQ(llama3->encode(" xyz", false, false), (std::vector<int32_t>{llama3->find_token("Ġxyz").value()}));
    auto gpt2 = make(testing::make_bpe_vocab("gpt-2"));
    const int32_t space = gpt2->find_token("Ġ").value();
    EXPECT_EQ(gpt2->encode(" xyz", false, false), (std::vector<int32_t>{space, 'x', 'y', 'z'}));
}

TEST_F(BpeTokenizerTest, ParsesSpecialTokens) {
    const int32_t im_end = id("<|im_end|>");
    EXPECT_EQ(tokenizer_->encode("hello<|im_end|>hello", false, true),
              (std::vector<int32_t>{id("hello"), im_end, id("hello")}));
    const std::vector<int32_t> plain = tokenizer_->encode("hello<|im_end|>", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), im_end), 0);
    EXPECT_EQ(tokenizer_->decode(plain), "hello<|im_end|>");
    for (bool parse_special : {false, true}) {
        EXPECT_EQ(tokenizer_->encode("<tool>", false, parse_special), (std::vector<int32_t>{id("<tool>")}));
    }
    // Longer special tokens win over shorter ones they contain.
    VocabData vocab = testing::make_bpe_vocab("qwen2");
    vocab.tokens.push_back("<tool>s");
    vocab.token_types.push_back(TokenType::kUserDefined);
    auto longer = make(std::move(vocab));
    EXPECT_EQ(longer->encode("<tool>s<tool>", false, false),
              (std::vector<int32_t>{longer->find_token("<tool>s").value(), longer->find_token("<tool>").value()}));
}

TEST_F(BpeTokenizerTest, DetectsEndOfGenerationTokens) {
    const int32_t im_end = id("<|im_end|>");
    const int32_t end_of_text = id("<|endoftext|>");
    EXPECT_EQ(tokenizer_->eot_id(), im_end);
    EXPECT_TRUE(tokenizer_->is_end_of_generation(im_end));
    EXPECT_TRUE(tokenizer_->is_end_of_generation(end_of_text));
    EXPECT_FALSE(tokenizer_->is_end_of_generation(id("hello")));
    EXPECT_EQ(tokenizer_->token_to_piece(im_end), "");
    EXPECT_EQ(tokenizer_->token_to_piece(im_end, true), "<|im_end|>");
}

TEST_F(BpeTokenizerTest, RoundTripsRandomText) {
    const std::vector<std::string> alphabet = {"a", "Z", "7", " ", "  ", "\n", "\t", "'s", "'LL", "!", ".", ",",
                                               "é", "日", "😀", "\u00a0", "\u3000", "½", "\u0301", "\r\n"};
    std::mt19937 rng(1234);
    for (int round = 0; round < 300; ++round) {
        std::string text;
        const int length = static_cast<int>(rng() % 24);
        for (int i = 0; i < length; ++i) text += alphabet[rng() % alphabet.size()];
        const std::vector<int32_t> ids = tokenizer_->encode(text, false, false);
        ASSERT_EQ(tokenizer_->decode(ids), text) << "round " << round;
    }
}

std::string random_bytes(std::mt19937& rng) {
    static const std::vector<std::string> kPieces = {"a", " ", "\n", "'s", "<tool>", "<|im_end|>", "<s>", "é",
                                                     "\xC3", "\xA9", "\xFF", "\xED\xA0\x80", "\xF0\x9F", "1"};
    std::string text;
    const int length = static_cast<int>(rng() % 20);
    for (int i = 0; i < length; ++i) {
        if (rng() % 3 == 0) {
            text.push_back(static_cast<char>(rng() % 256));
        } else {
            text += kPieces[rng() % kPieces.size()];
        }
    }
    return text;
}

bool is_valid_utf8(std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
        const unicode::Utf8Step step = unicode::next_utf8_sequence(text.substr(pos));
        if (step.status != unicode::Utf8Status::kValid) return false;
        pos += step.length;
    }
    return true;
}

// Valid text comes back unchanged. Invalid bytes are spelled as byte tokens, but a stray lead byte swallows the
// bytes after it into one symbol (as in llama.cpp), which can turn a following space into raw U+2581 bytes.
TEST_F(SpmTokenizerTest, HandlesArbitraryBytes) {
    std::mt19937 rng(7);
    int valid = 0;
    for (int round = 0; round < 500; ++round) {
        const std::string text = random_bytes(rng);
        for (bool parse_special : {false, true}) {
            const std::vector<int32_t> ids = tokenizer_->encode(text, true, parse_special);
            for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tokenizer_->vocab_size());
        }
        // A user-defined token makes the next text start with a space prefix (see RoundTripsText).
        if (!is_valid_utf8(text) || text.find("<tool>") != std::string::npos) continue;
        ++valid;
        ASSERT_EQ(tokenizer_->decode(tokenizer_->encode(text, false, false)), text) << "round " << round;
    }
    EXPECT_GT(valid, 50);
}

// Byte-level BPE sees invalid UTF-8 as llama.cpp decodes it: each stray byte becomes U+FFFD.
TEST_F(BpeTokenizerTest, RoundTripsArbitraryBytesAsLlamaCppDecodesThem) {
    std::mt19937 rng(11);
    for (int round = 0; round < 500; ++round) {
        const std::string text = random_bytes(rng);
        std::string expected;
        for (uint32_t cpt : unicode::decode_utf8(text)) unicode::append_utf8(cpt, expected);
        ASSERT_EQ(tokenizer_->decode(tokenizer_->encode(text, false, false)), expected) << "round " << round;
        ASSERT_EQ(tokenizer_->decode(tokenizer_->encode(text, false, true), false, true), expected) << "round " << round;
    }
}

TEST(BpeInvalidUtf8Test, InvalidBytesBecomeReplacementCharacters) {
    auto tokenizer = make(testing::make_bpe_vocab("qwen2"));
    EXPECT_EQ(tokenizer->decode(tokenizer->encode("a\xFF" "b", false, false)), "a\xEF\xBF\xBD" "b");
}

TEST(BpeCleanSpacesTest, Gpt2DecodeTidiesPunctuation) {
    auto tokenizer = make(testing::make_bpe_vocab("gpt-2"));
    EXPECT_TRUE(tokenizer->clean_spaces());
    EXPECT_EQ(tokenizer->decode(tokenizer->encode("hello , world !", false, false)), "hello, world!");
}

}  // namespace
}  // namespace tern
