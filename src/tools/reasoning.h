// Reasoning models (Qwen3, QwQ, DeepSeek-R1 and their distills) write their thinking between two markers before the
// answer: <think> ... </think> answer. The thinking goes out as the message's `reasoning_content` (vLLM's field),
// the answer as its `content`, and a request's grammar or tool-call parsing applies to the answer only. Whether the
// output begins inside the thinking is read off the rendered prompt. Knows nothing of requests.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tern::tools {

struct ReasoningFormat {
    std::string start = "<think>";
    std::string end = "</think>";
};

// The format a chat template's model thinks in: one whose template handles </think> (to strip past thinking from
// the history, or to write an empty block when thinking is off); nullopt otherwise.
std::optional<ReasoningFormat> detect_reasoning_format(std::string_view chat_template);

enum class ReasoningStart {
    kClosed,  // the prompt ends with a closed, empty block (Qwen3 with enable_thinking false): all answer
    kMay,     // the model may open a block itself (Qwen3's default: the prompt leaves it to the model)
    kOpened,  // the prompt opened the block (DeepSeek-R1's templates end with "<think>\n"): thinking comes first
};

// From the rendered prompt's end: a closing marker last (whitespace aside) closed it, an opening one after the last
// closing one opened it.
ReasoningStart reasoning_start(std::string_view prompt, const ReasoningFormat& format);

// Splits one choice's text into thinking and answer as it streams: what push() returns of each, concatenated,
// equals the split of the whole text. The markers are dropped; leading whitespace of the answer too.
class ReasoningParser {
public:
    ReasoningParser(ReasoningFormat format, ReasoningStart start);

    struct Split {
        std::string reasoning;
        std::string content;
    };
    Split push(std::string_view text);
    // At the end of generation: what was held back (a text that stopped inside the thinking is all thinking).
    Split finish();

private:
    enum class State { kUndecided, kReasoning, kAnswer };
    void take_answer(std::string_view text, Split& out);

    ReasoningFormat format_;
    State state_;
    std::string held_;  // text that may still be a marker's beginning
    bool answer_started_ = false;
};

}  // namespace tern::tools
