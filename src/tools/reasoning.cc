#include "tools/reasoning.h"

#include <utility>

#include "tools/text_scan.h"

namespace tern::tools {

std::optional<ReasoningFormat> detect_reasoning_format(std::string_view chat_template) {
    if (chat_template.find("</think>") != std::string_view::npos) return ReasoningFormat{};
    return std::nullopt;
}

ReasoningStart reasoning_start(std::string_view prompt, const ReasoningFormat& format) {
    const std::string_view trimmed = trim_right(prompt);
    if (trimmed.size() >= format.end.size() && trimmed.substr(trimmed.size() - format.end.size()) == format.end) {
        return ReasoningStart::kClosed;
    }
    const size_t opened = prompt.rfind(format.start);
    const size_t closed = prompt.rfind(format.end);
    if (opened != std::string_view::npos && (closed == std::string_view::npos || opened > closed)) {
        return ReasoningStart::kOpened;
    }
    return ReasoningStart::kMay;
}

ReasoningParser::ReasoningParser(ReasoningFormat format, ReasoningStart start)
    : format_(std::move(format)),
      state_(start == ReasoningStart::kClosed   ? State::kAnswer
             : start == ReasoningStart::kOpened ? State::kReasoning
                                                : State::kUndecided) {}

void ReasoningParser::take_answer(std::string_view text, Split& out) {
    if (!answer_started_) {
        text = trim_left(text);
        answer_started_ = !text.empty();
    }
    out.content += text;
}

ReasoningParser::Split ReasoningParser::push(std::string_view text) {
    Split out;
    if (state_ == State::kAnswer) {
        take_answer(text, out);
        return out;
    }
    held_ += text;
    if (state_ == State::kUndecided) {
        const std::string_view start = trim_left(held_);
        if (start.size() < format_.start.size() && format_.start.compare(0, start.size(), start) == 0) return out;
        if (start.substr(0, format_.start.size()) == format_.start) {
            held_ = std::string(start.substr(format_.start.size()));
            state_ = State::kReasoning;
        } else {
            state_ = State::kAnswer;
            take_answer(std::exchange(held_, {}), out);
            return out;
        }
    }
    const size_t end = held_.find(format_.end);
    if (end != std::string::npos) {
        out.reasoning = held_.substr(0, end);
        const std::string rest = held_.substr(end + format_.end.size());
        held_.clear();
        state_ = State::kAnswer;
        take_answer(rest, out);
        return out;
    }
    const size_t keep = marker_prefix_at_end(held_, format_.end);  // not all of it: find() saw none
    out.reasoning = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

ReasoningParser::Split ReasoningParser::finish() {
    Split out;
    if (state_ == State::kReasoning) {
        out.reasoning = std::exchange(held_, {});
    } else if (state_ == State::kUndecided) {
        take_answer(std::exchange(held_, {}), out);
    }
    state_ = State::kAnswer;
    return out;
}

}  // namespace tern::tools
