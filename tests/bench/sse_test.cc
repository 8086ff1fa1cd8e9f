#include "api/sse.h"

#include <gtest/gtest.h>

namespace tern::api {
namespace {

std::vector<SseEvent> parse_in_pieces(std::string_view text, size_t piece) {
    SseParser parser;
    std::vector<SseEvent> events;
    for (size_t start = 0; start < text.size(); start += piece) parser.feed(text.substr(start, piece), &events);
    parser.finish(&events);
    return events;
}

TEST(Sse, EventsSurviveAnySplitOfTheBytes) {
    const std::string text = "data: {\"a\":1}\n\n: keep-alive comment\n\ndata: {\"b\":2}\r\n\r\nevent: done\ndata: x\n"
                             "data: y\nid: 7\n\ndata: [DONE]\n\n";
    for (size_t piece : {1u, 2u, 3u, 7u, 1000u}) {
        const std::vector<SseEvent> events = parse_in_pieces(text, piece);
        ASSERT_EQ(events.size(), 4u) << "piece " << piece;
        EXPECT_EQ(events[0].data, "{\"a\":1}");
        EXPECT_EQ(events[1].data, "{\"b\":2}");
        EXPECT_EQ(events[2].event, "done");
        EXPECT_EQ(events[2].data, "x\ny");
        EXPECT_EQ(events[2].id, "7");
        EXPECT_EQ(events[3].data, "[DONE]");
    }
}

TEST(Sse, ValueKeepsAllButOneLeadingSpaceAndAcceptsNoSpace) {
    SseParser parser;
    std::vector<SseEvent> events;
    parser.feed("data:  two\n\ndata:none\n\n", &events);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].data, " two");
    EXPECT_EQ(events[1].data, "none");
}

TEST(Sse, FinishDispatchesALastEventWithoutBlankLineAndPendingCountsBytes) {
    SseParser parser;
    std::vector<SseEvent> events;
    parser.feed("data: {\"partial\":", &events);
    EXPECT_TRUE(events.empty());
    EXPECT_GT(parser.pending_bytes(), 0u);
    parser.feed("true}", &events);
    parser.finish(&events);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].data, "{\"partial\":true}");
}

TEST(Sse, FormatRoundTripsThroughTheParser) {
    const std::string data = "line one\nline two";
    const std::string wire = format_sse_data(data);
    EXPECT_EQ(wire, "data: line one\ndata: line two\n\n");
    SseParser parser;
    std::vector<SseEvent> events;
    parser.feed(wire, &events);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].data, data);
}

}  // namespace
}  // namespace tern::api
