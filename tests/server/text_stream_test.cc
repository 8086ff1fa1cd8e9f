// TextStream on the stories260K vocabulary: stop strings cut exactly (also across tokens), text that may start a
// stop string is held back only as long as needed, and byte tokens never yield broken UTF-8.
#include <gtest/gtest.h>

#include "formats/gguf.h"
#include "serving/text_stream.h"

namespace tern::serving {
namespace {

class TextStreamTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        auto file = GgufFile::open(std::string(TERN_SHARED_DIR) + "/models/stories260K/stories260K-f32.gguf");
        ASSERT_TRUE(file.is_ok());
        auto tokenizer = Tokenizer::from_gguf(*file.value());
        ASSERT_TRUE(tokenizer.is_ok());
        tokenizer_ = tokenizer.value().release();
    }
    static void TearDownTestSuite() { delete tokenizer_; }

    // Streams the tokens of `text` and returns everything emitted (pushes then finish).
    static std::string stream(const std::string& text, std::vector<std::string> stops, bool* stopped) {
        TextStream stream(*tokenizer_, std::move(stops));
        std::string out;
        for (int32_t id : tokenizer_->encode(text, false, false)) out += stream.push(id);
        out += stream.finish();
        *stopped = stream.stopped();
        return out;
    }

    static Tokenizer* tokenizer_;
};

Tokenizer* TextStreamTest::tokenizer_ = nullptr;

TEST_F(TextStreamTest, NoStopStringsGivesTheDecodedText) {
    bool stopped = true;
    const std::string text = "Once upon a time, there was a little girl.";
    EXPECT_EQ(stream(text, {}, &stopped), " " + text);  // SentencePiece's leading space is kept while streaming
    EXPECT_FALSE(stopped);
}

TEST_F(TextStreamTest, StopStringsCutBeforeTheFirstMatch) {
    bool stopped = false;
    EXPECT_EQ(stream("She saw a big dog. The dog was happy.", {"dog"}, &stopped), " She saw a big ");
    EXPECT_TRUE(stopped);
    EXPECT_EQ(stream("She saw a big dog. The dog was happy.", {"was", "g. T"}, &stopped), " She saw a big do");
    EXPECT_TRUE(stopped);
    EXPECT_EQ(stream("She saw a cat.", {"dog"}, &stopped), " She saw a cat.");
    EXPECT_FALSE(stopped);
}

TEST_F(TextStreamTest, HoldsBackOnlyWhatMayStartAStopString) {
    TextStream stream(*tokenizer_, {"Lily!"});
    std::string out;
    for (int32_t id : tokenizer_->encode("Tom and Lily", false, false)) out += stream.push(id);
    EXPECT_EQ(out, " Tom and ") << "'Lily' may still become 'Lily!'";
    out += stream.finish();
    EXPECT_EQ(out, " Tom and Lily");
    EXPECT_FALSE(stream.stopped());
}

TEST_F(TextStreamTest, ByteTokensNeverBreakUtf8) {
    // stories260K has byte-fallback tokens <0x00>..<0xFF>: feed a character byte by byte, then a stray byte.
    std::vector<int32_t> bytes;
    for (const char* piece : {"<0xE2>", "<0x82>", "<0xAC>", "<0xFF>"}) {
        auto id = tokenizer_->find_token(piece);
        ASSERT_TRUE(id.has_value()) << piece;
        bytes.push_back(*id);
    }
    TextStream stream(*tokenizer_, {});
    EXPECT_EQ(stream.push(bytes[0]), "");
    EXPECT_EQ(stream.push(bytes[1]), "");
    EXPECT_EQ(stream.push(bytes[2]), "\xE2\x82\xAC");  // the euro sign, once complete
    std::string rest = stream.push(bytes[3]);
    rest += stream.finish();
    EXPECT_EQ(rest, "\xEF\xBF\xBD");  // U+FFFD
}

}  // namespace
}  // namespace tern::serving
