// The thinking of a reasoning model split from its answer: whole texts against what the split must be, and every
// text streamed in random pieces against the same text at once.
#include <gtest/gtest.h>

#include <random>

#include "tools/reasoning.h"

namespace tern::tools {
namespace {

struct Whole {
    std::string reasoning, content;
};

Whole split_whole(std::string_view text, ReasoningStart start) {
    ReasoningParser parser(ReasoningFormat{}, start);
    ReasoningParser::Split first = parser.push(text);
    ReasoningParser::Split rest = parser.finish();
    return {first.reasoning + rest.reasoning, first.content + rest.content};
}

TEST(Reasoning, SplitsTheThinkingFromTheAnswer) {
    const auto expect = [](std::string_view text, ReasoningStart start, const std::string& reasoning,
                           const std::string& content) {
        const Whole split = split_whole(text, start);
        EXPECT_EQ(split.reasoning, reasoning) << text;
        EXPECT_EQ(split.content, content) << text;
    };
    using enum ReasoningStart;
    expect("<think>\nhmm, 2+2\n</think>\n\n4", kMay, "\nhmm, 2+2\n", "4");
    expect("  <think>a</think>b", kMay, "a", "b");
    expect("4, no thinking", kMay, "", "4, no thinking");
    expect("<thin", kMay, "", "<thin");                  // never became the marker: it was answer
    expect("<think>cut by max_tokens", kMay, "cut by max_tokens", "");
    expect("a</think>{\"x\": 1}", kOpened, "a", "{\"x\": 1}");
    expect("<think>a</think>b", kClosed, "", "<think>a</think>b");  // the prompt closed it: all answer
    expect("a</think>b</think>c", kOpened, "a", "b</think>c");      // only the first end ends the thinking
    expect("", kMay, "", "");
    expect("</thi", kOpened, "</thi", "");
}

TEST(Reasoning, StreamedInAnyPiecesSplitsAsTheWholeText) {
    std::mt19937 rng(20261204);
    const std::vector<std::string> pieces = {"<think>", "</think>", "<", "</", "think", ">", "\n", " ", "a", "{}",
                                             "</th", "ink>", "<thi", "nk>"};
    for (int round = 0; round < 3000; ++round) {
        std::string text;
        for (int i = static_cast<int>(rng() % 12); i > 0; --i) text += pieces[rng() % pieces.size()];
        const auto start = static_cast<ReasoningStart>(rng() % 3);
        const Whole whole = split_whole(text, start);
        ReasoningParser parser(ReasoningFormat{}, start);
        std::string reasoning, content;
        for (size_t at = 0; at < text.size();) {
            const size_t length = std::min<size_t>(text.size() - at, rng() % 4);
            const ReasoningParser::Split split = parser.push(std::string_view(text).substr(at, length));
            reasoning += split.reasoning;
            content += split.content;
            at += length;
        }
        const ReasoningParser::Split rest = parser.finish();
        EXPECT_EQ(reasoning + rest.reasoning, whole.reasoning) << text;
        EXPECT_EQ(content + rest.content, whole.content) << text;
        // Nothing is lost but the markers and the answer's leading whitespace.
        EXPECT_LE(whole.reasoning.size() + whole.content.size(), text.size());
    }
}

TEST(Reasoning, TheRenderedPromptTellsWhereTheOutputBegins) {
    const ReasoningFormat think;
    EXPECT_EQ(reasoning_start("<|im_start|>assistant\n", think), ReasoningStart::kMay);
    EXPECT_EQ(reasoning_start("<|im_start|>assistant\n<think>\n\n</think>\n\n", think), ReasoningStart::kClosed);
    EXPECT_EQ(reasoning_start("<｜Assistant｜><think>\n", think), ReasoningStart::kOpened);
    // A past turn's thinking in the history neither opens nor closes this one.
    EXPECT_EQ(reasoning_start("<think>x</think>y<|im_end|>\n<|im_start|>assistant\n", think), ReasoningStart::kMay);
    EXPECT_TRUE(detect_reasoning_format("{{ content.split('</think>')[-1] }}").has_value());
    EXPECT_FALSE(detect_reasoning_format("{{ content }}").has_value());
}

}  // namespace
}  // namespace tern::tools
