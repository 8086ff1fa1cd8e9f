// The streaming detokenizer (partial UTF-8 held back, invalid bytes replaced) and llama.cpp's space clean-up.
#include <gtest/gtest.h>

#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/test_vocabs.h"

namespace tern {
namespace {

class StreamingDetokenizerTest : public ::testing::Test {
protected:
    static int32_t byte(uint8_t value) { return 3 + value; }  // the SPM test vocabulary's <0xNN>
    int32_t id(std::string_view text) const { return tokenizer_->find_token(text).value(); }

    std::unique_ptr<Tokenizer> tokenizer_ = std::move(Tokenizer::create(testing::make_spm_vocab())).value();
};

TEST_F(StreamingDetokenizerTest, HoldsBackTwoByteCharacterUntilComplete) {
    StreamingDetokenizer stream(*tokenizer_);
    EXPECT_EQ(stream.push(id("\u2581hello")), " hello");
    EXPECT_EQ(stream.push(byte(0xC3)), "");
    EXPECT_EQ(stream.pending_bytes(), 1u);
    EXPECT_EQ(stream.push(byte(0xA9)), "\u00e9");
    EXPECT_EQ(stream.pending_bytes(), 0u);
    EXPECT_EQ(stream.flush(), "");
}

TEST_F(StreamingDetokenizerTest, HoldsBackFourByteCharacterAcrossThreeTokens) {
    StreamingDetokenizer stream(*tokenizer_);
    const std::string emoji = "\xF0\x9F\x98\x80";  // U+1F600
    std::string out;
    for (size_t i = 0; i < emoji.size(); ++i) {
        const std::string chunk = stream.push(byte(static_cast<uint8_t>(emoji[i])));
        if (i + 1 < emoji.size()) {
            EXPECT_EQ(chunk, "") << "after byte " << i;
        }
        out += chunk;
    }
    EXPECT_EQ(out, emoji);
}

TEST_F(StreamingDetokenizerTest, ReplacesBytesThatCannotFormACharacter) {
    StreamingDetokenizer stream(*tokenizer_);
    EXPECT_EQ(stream.push(byte(0xFF)), "\uFFFD");
    // A lead byte followed by a non-continuation: the lead alone is replaced, the next character passes.
    EXPECT_EQ(stream.push(byte(0xE2)), "");
    EXPECT_EQ(stream.push(byte(0x82)), "");
    EXPECT_EQ(stream.push(id("h")), "\uFFFDh");
    // A surrogate encoding is invalid from its second byte on.
    EXPECT_EQ(stream.push(byte(0xED)), "");
    EXPECT_EQ(stream.push(byte(0xA0)), "\uFFFD\uFFFD");
}

TEST_F(StreamingDetokenizerTest, FlushReplacesAnUnfinishedCharacter) {
    StreamingDetokenizer stream(*tokenizer_);
    EXPECT_EQ(stream.push(byte(0xE2)), "");
    EXPECT_EQ(stream.flush(), "\uFFFD");
    EXPECT_EQ(stream.pending_bytes(), 0u);
    EXPECT_EQ(stream.push(id("h")), "h");
}

TEST_F(StreamingDetokenizerTest, RendersControlTokensOnlyWhenAsked) {
    StreamingDetokenizer plain(*tokenizer_);
    EXPECT_EQ(plain.push(2), "");
    StreamingDetokenizer special(*tokenizer_, /*render_special=*/true);
    EXPECT_EQ(special.push(2), "</s>");
}

TEST_F(StreamingDetokenizerTest, StreamEqualsDecodeOfTheSameIds) {
    const std::string text = "héllo wörld 😀 日本";
    const std::vector<int32_t> ids = tokenizer_->encode(text, true, false);
    StreamingDetokenizer stream(*tokenizer_);
    std::string streamed;
    for (int32_t token : ids) streamed += stream.push(token);
    streamed += stream.flush();
    EXPECT_EQ(streamed, tokenizer_->decode(ids));
    EXPECT_EQ(streamed, " " + text);
}

TEST(CleanUpSpacesTest, MatchesLlamaCppPasses) {
    auto clean = [](std::string text) {
        clean_up_spaces(text);
        return text;
    };
    EXPECT_EQ(clean("Hello , world ! Really ? Yes ."), "Hello, world! Really? Yes.");
    EXPECT_EQ(clean("a ' b"), "a'b");
    // The second quote no longer sees a space before it: llama.cpp blanks the one it skipped.
    EXPECT_EQ(clean("a ' ' b"), "a'' b");
    EXPECT_EQ(clean("it 's he 'm we 're they 've"), "it's he'm we're they've");
    EXPECT_EQ(clean("don 't I 'd we 'll"), "don 't I 'd we 'll");
    EXPECT_EQ(clean(" ,"), ",");
    EXPECT_EQ(clean(""), "");
}

}  // namespace
}  // namespace tern
