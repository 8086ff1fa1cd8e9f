#include "base/printable.h"

#include <gtest/gtest.h>

namespace tern {
namespace {

TEST(Printable, PlainTextAndUtf8StayAsTheyAre) {
    EXPECT_EQ(printable("llama.block_count"), "llama.block_count");
    EXPECT_EQ(printable("h\xc3\xa9llo \xe2\x96\x81\xf0\x9f\x99\x82"), "h\xc3\xa9llo \xe2\x96\x81\xf0\x9f\x99\x82");
}

TEST(Printable, ControlBytesBackslashesAndInvalidUtf8AreEscaped) {
    EXPECT_EQ(printable(std::string("a\nb\tc\\d\0e\x7f", 10)), "a\\nb\\tc\\\\d\\x00e\\x7f");
    EXPECT_EQ(printable("\xff\xc3("), "\\xff\\xc3(");             // a stray byte, a lead byte without continuation
    EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");       // a UTF-16 surrogate is not UTF-8
    EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                // overlong
    EXPECT_EQ(printable("\xe2\x96"), "\\xe2\\x96");                // a sequence cut short
    EXPECT_EQ(printable("\xf8\x80\x80"), "\\xf8\\x80\\x80");        // no lead byte past 0xF4
}

TEST(Printable, LongTextIsCutWithAnEllipsis) {
    EXPECT_EQ(printable(std::string(200, 'k'), 8), "kkkkkkkk...");
    EXPECT_EQ(printable(std::string(8, 'k'), 8), "kkkkkkkk");
    const std::string shown = printable(std::string(5000, '\n'));
    EXPECT_EQ(shown.find('\n'), std::string::npos);
    EXPECT_LE(shown.size(), 96u * 2 + 3);
}

}  // namespace
}  // namespace tern
