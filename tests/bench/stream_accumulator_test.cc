#include "bench/stream_accumulator.h"

#include <gtest/gtest.h>

namespace tern::bench {
namespace {

using std::chrono::milliseconds;

std::string data(const std::string& json) { return "data: " + json + "\n\n"; }

TEST(StreamAccumulator, MeasuresTtftAndEveryInterTokenGapFromArrivalTimes) {
    const Clock::time_point start{};
    StreamAccumulator accumulator(start);
    // A role-only delta arrives first and is not a token.
    ASSERT_TRUE(accumulator.feed(data(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]})"),
                                 start + milliseconds(5)));
    ASSERT_TRUE(accumulator.feed(data(R"({"choices":[{"index":0,"delta":{"content":"a"}}]})"),
                                 start + milliseconds(50)));
    // One event split across two reads gets the time of the read that completed it.
    ASSERT_TRUE(accumulator.feed("data: {\"choices\":[{\"index\":0,\"delta\":", start + milliseconds(60)));
    ASSERT_TRUE(accumulator.feed("{\"content\":\"b\"}}]}\n\n", start + milliseconds(62)));
    ASSERT_TRUE(accumulator.feed(data(R"({"choices":[{"index":0,"delta":{"content":"c"},"finish_reason":"length"}]})") +
                                     data(R"({"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":3}})") +
                                     "data: [DONE]\n\n",
                                 start + milliseconds(70)));
    accumulator.finish(start + milliseconds(71));
    const StreamMeasurement& m = accumulator.measurement();
    EXPECT_TRUE(m.got_token);
    EXPECT_DOUBLE_EQ(m.ttft_s, 0.050);
    ASSERT_EQ(m.itl_s.size(), 2u);
    EXPECT_NEAR(m.itl_s[0], 0.012, 1e-12);
    EXPECT_NEAR(m.itl_s[1], 0.008, 1e-12);
    EXPECT_DOUBLE_EQ(m.last_token_s, 0.070);
    EXPECT_EQ(m.num_token_chunks, 3);
    EXPECT_EQ(m.finish_reason, "length");
    ASSERT_TRUE(m.usage.has_value());
    EXPECT_EQ(m.usage->completion_tokens, 3);
    EXPECT_TRUE(m.saw_done);
    EXPECT_TRUE(m.bad_chunk.empty());
}

TEST(StreamAccumulator, StopsOnAnErrorObjectOrAnUndecodableChunk) {
    StreamAccumulator with_error(Clock::time_point{});
    EXPECT_FALSE(with_error.feed(data(R"({"error":{"message":"boom"}})"), Clock::time_point{}));
    ASSERT_TRUE(with_error.measurement().stream_error.has_value());
    EXPECT_EQ(with_error.measurement().stream_error->message, "boom");

    StreamAccumulator garbled(Clock::time_point{});
    EXPECT_FALSE(garbled.feed("data: {oops\n\n", Clock::time_point{}));
    EXPECT_FALSE(garbled.measurement().bad_chunk.empty());
}

TEST(StreamAccumulator, FinishDecodesATrailingEventWithoutBlankLine) {
    StreamAccumulator accumulator(Clock::time_point{});
    ASSERT_TRUE(accumulator.feed(R"(data: {"choices":[{"text":"x"}]})", Clock::time_point{} + milliseconds(3)));
    EXPECT_FALSE(accumulator.measurement().got_token);
    accumulator.finish(Clock::time_point{} + milliseconds(4));
    EXPECT_TRUE(accumulator.measurement().got_token);
    EXPECT_DOUBLE_EQ(accumulator.measurement().ttft_s, 0.004);
}

}  // namespace
}  // namespace tern::bench
