#include "tools/tool_call_parser.h"

#include <algorithm>

#include "tools/text_scan.h"

namespace tern::tools {
namespace {

constexpr std::string_view kHermesClose = "</tool_call>";

}  // namespace

ToolCallParser::ToolCallParser(ParserOptions options)
    : options_(std::move(options)),
      marker_(tool_marker(options_.format)),
      state_(options_.format == ToolFormat::kLlama3Json ? State::kStart : State::kText) {
    if (!options_.make_id) {
        options_.make_id = [format = options_.format] { return make_call_id(format); };
    }
}

ParsedDelta ToolCallParser::push(std::string_view text) {
    input_.append(text);
    while (cursor_ < input_.size()) step(input_[cursor_++]);
    input_.clear();
    cursor_ = 0;
    ParsedDelta out;
    std::swap(out, out_);
    return out;
}

ParsedDelta ToolCallParser::finish() {
    // A call that never got its name is content after all; giving it up may put text back to read again.
    while (state_ == State::kOpen || (state_ == State::kCall && !committed_)) {
        if (after_separator_) {  // "," or ";" with no call after it: part of the calls' syntax, not content
            held_.clear();
            object_.reset();
            state_ = text_state();
            break;
        }
        give_up();
        while (cursor_ < input_.size()) step(input_[cursor_++]);
        input_.clear();
        cursor_ = 0;
    }
    if (state_ == State::kCall) end_call();  // cut short: the arguments as far as they went
    const bool any_call = num_calls_seen_ > 0;
    if (state_ == State::kStart || (state_ == State::kText && !any_call)) emit_content(space_);
    if (state_ == State::kStart || state_ == State::kText) emit_content(prefix_);
    space_.clear();  // with calls: whitespace next to them
    prefix_.clear();  // after a call: part of its closing tag
    ParsedDelta out;
    std::swap(out, out_);
    return out;
}

ToolCallParser::State ToolCallParser::text_state() const {
    return options_.format == ToolFormat::kLlama3Json ? State::kPlain : State::kText;
}

void ToolCallParser::step(char c) {
    switch (state_) {
        case State::kStart: return start_char(c);
        case State::kText: return text_char(c);
        case State::kPlain:
            if (skip_space_ && is_space(c)) return;
            skip_space_ = false;
            return emit_content(std::string_view(&c, 1));
        case State::kOpen: return open_char(c);
        case State::kCall: return call_char(c);
        case State::kAfterCall: return after_call_char(c);
    }
}

// Llama 3: a call opens the output (after whitespace) with "{" or <|python_tag|>; anything else is plain text.
void ToolCallParser::start_char(char c) {
    if (prefix_.empty() && is_space(c)) {
        space_ += c;
        return;
    }
    prefix_ += c;
    if (prefix_ == "{") {
        held_ = space_ + prefix_;  // the whitespace is given back if this is no call
        marker_length_ = space_.size();
        space_.clear();
        prefix_.clear();
        begin_call();
        return;
    }
    if (marker_.starts_with(prefix_)) {
        if (prefix_.size() == marker_.size()) enter_open();
        return;
    }
    state_ = State::kPlain;
    emit_content(space_ + prefix_);
    space_.clear();
    prefix_.clear();
}

// Text is held only while it may still be whitespace and a marker: whitespace before a call is not content.
void ToolCallParser::text_char(char c) {
    if (skip_space_ && is_space(c)) return;  // right after a call
    skip_space_ = false;
    if (prefix_.empty() && is_space(c)) {
        space_ += c;
        return;
    }
    prefix_ += c;
    const size_t matched = marker_prefix_at_end(prefix_, marker_);
    if (matched == prefix_.size()) {
        if (matched == marker_.size()) enter_open();
        return;
    }
    emit_content(space_);
    space_.clear();
    if (matched == 0 && is_space(c)) {  // markers hold no whitespace: this one may come before the next
        prefix_.pop_back();
        emit_content(prefix_);
        prefix_.clear();
        space_ += c;
        return;
    }
    emit_content(std::string_view(prefix_).substr(0, prefix_.size() - matched));
    prefix_.erase(0, prefix_.size() - matched);
}

// The marker has been read; the whitespace before it is given back with it if no call follows.
void ToolCallParser::enter_open() {
    held_ = space_ + marker_;
    marker_length_ = held_.size();
    space_.clear();
    prefix_.clear();
    after_separator_ = false;
    in_list_ = false;
    state_ = State::kOpen;
}

void ToolCallParser::open_char(char c) {
    held_ += c;
    if (is_space(c)) return;
    if (options_.format == ToolFormat::kMistral && !in_list_ && !after_separator_ && c == '[') {
        in_list_ = true;
        return;
    }
    if (c == '{') return begin_call();
    give_up();
}

void ToolCallParser::begin_call() {
    object_.emplace();
    object_->push('{');
    committed_ = false;
    state_ = State::kCall;
}

void ToolCallParser::call_char(char c) {
    if (!committed_) held_ += c;
    const CallObject::Progress progress = object_->push(c);
    if (progress == CallObject::Progress::kFailed) return committed_ ? break_off(c) : give_up();
    if (!committed_ && object_->name()) {
        const std::vector<std::string>& names = options_.tool_names;
        if (!names.empty() && std::find(names.begin(), names.end(), *object_->name()) == names.end()) {
            return give_up();
        }
        commit(*object_->name());
    }
    if (committed_) emit_arguments(object_->take_arguments());
    if (progress != CallObject::Progress::kDone) return;
    if (!committed_) return give_up();  // an object without a name
    if (!object_->has_arguments()) emit_arguments("{}");
    end_call();
    state_ = State::kAfterCall;
}

// The call is announced: the arguments read so far (a model may write them before the name) follow at once.
void ToolCallParser::commit(const std::string& name) {
    committed_ = true;
    held_.clear();
    dropped_ = !options_.several_calls && num_calls_seen_ > 0;
    ++num_calls_seen_;
    if (dropped_) return;
    ToolCall call{options_.make_id(), name, ""};
    out_.calls.push_back(ToolCallDelta{static_cast<int>(calls_.size()), call.id, call.name, ""});
    calls_.push_back(std::move(call));
}

void ToolCallParser::emit_arguments(const std::string& fragment) {
    if (fragment.empty() || dropped_) return;
    calls_.back().arguments += fragment;
    const int index = static_cast<int>(calls_.size()) - 1;
    if (!out_.calls.empty() && out_.calls.back().index == index && out_.calls.back().id.empty()) {
        out_.calls.back().arguments += fragment;
        return;
    }
    out_.calls.push_back(ToolCallDelta{index, "", "", fragment});
}

void ToolCallParser::emit_content(std::string_view text) { out_.content += text; }

void ToolCallParser::end_call() {
    object_.reset();
    committed_ = false;
    dropped_ = false;
    held_.clear();
}

// Not a call after all: the marker (and the whitespace before it) is content, and what followed it is read again.
void ToolCallParser::give_up() {
    emit_content(std::string_view(held_).substr(0, marker_length_));
    std::string rest = held_.substr(marker_length_);
    held_.clear();
    object_.reset();
    in_list_ = false;
    after_separator_ = false;
    state_ = text_state();
    rescan(std::move(rest));
}

// `c` broke an announced call: the call ends before it, and it is read again as text.
void ToolCallParser::break_off(char c) {
    end_call();
    in_list_ = false;
    state_ = text_state();
    rescan(std::string(1, c));
}

void ToolCallParser::rescan(std::string text) {
    text.append(input_, cursor_);  // what push() has not read yet follows
    input_ = std::move(text);
    cursor_ = 0;
}

// After a call's object: its closing tag (Hermes), the next call or the list's end (Mistral), ";" and the next call
// (Llama 3); anything else is text again. Whitespace next to a call is not content.
void ToolCallParser::after_call_char(char c) {
    if (options_.format == ToolFormat::kHermes) return after_hermes_call_char(c);
    if (is_space(c)) return;
    const char separator = options_.format == ToolFormat::kMistral ? ',' : ';';
    if (c == separator && (in_list_ || options_.format == ToolFormat::kLlama3Json)) {
        held_ = std::string(1, c);
        marker_length_ = 1;
        after_separator_ = true;
        state_ = State::kOpen;
        return;
    }
    const bool list_end = in_list_ && c == ']';
    in_list_ = false;
    state_ = text_state();
    skip_space_ = true;
    if (!list_end) rescan(std::string(1, c));
}

// "</tool_call>" ends the call; a missing closing tag is forgiven (Qwen sometimes leaves it out).
void ToolCallParser::after_hermes_call_char(char c) {
    if (prefix_.empty() && is_space(c)) return;
    prefix_ += c;
    if (kHermesClose.starts_with(prefix_)) {
        if (prefix_.size() < kHermesClose.size()) return;
        prefix_.clear();
        state_ = State::kText;
        skip_space_ = true;
        return;
    }
    std::string text = std::move(prefix_);
    prefix_.clear();
    state_ = State::kText;
    skip_space_ = true;
    rescan(std::move(text));
}

ParsedOutput parse_tool_calls(std::string_view text, ParserOptions options) {
    ToolCallParser parser(std::move(options));
    ParsedOutput output;
    output.content = parser.push(text).content;
    output.content += parser.finish().content;
    output.calls = parser.calls();
    return output;
}

}  // namespace tern::tools
