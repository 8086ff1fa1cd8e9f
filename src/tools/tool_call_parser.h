// Tool calls parsed out of a model's text in one of the formats of tool_format.h, as the text streams in: what is
// not a call is content, passed on at once except for a tail that may still become a call's marker; a call is
// announced (id and name) once its name is read, and its arguments follow in fragments as they are generated. The
// whole text parses the same way in one piece, so a stream's deltas add up to the non-streamed answer.
//
// Rules, for every format:
//   - a call counts only when its name is one of the request's tools; text that turns out not to be a call (an
//     unknown name, something other than a call object after the marker) stays content, marker and all;
//   - whitespace next to a call (before its marker, between calls, at the end) is not content;
//   - once a call is announced it stays a call: text that breaks it off (a model that loses its way, max_tokens)
//     ends it there, and what follows is content again;
//   - Hermes calls may come anywhere in the text, as many as the model writes, the closing tag optional;
//     Llama 3 calls only at the very start (after optional whitespace and <|python_tag|>), several separated by ";";
//     Mistral calls after [TOOL_CALLS], as a list or a single object;
//   - without several_calls, calls after the first are parsed and dropped (vLLM's parallel_tool_calls=false).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/call_object.h"
#include "tools/tool_format.h"

namespace tern::tools {

struct ToolCall {
    std::string id;
    std::string name;
    std::string arguments;  // JSON text without whitespace between tokens
};

// Part of a call: its first delta has the id and name (arguments ""), later ones arguments only.
struct ToolCallDelta {
    int index = 0;  // the call's place among the calls of the text
    std::string id;
    std::string name;
    std::string arguments;
};

// What may be sent after some text: content, and the calls' deltas in order.
struct ParsedDelta {
    std::string content;
    std::vector<ToolCallDelta> calls;
};

struct ParserOptions {
    ToolFormat format = ToolFormat::kHermes;
    std::vector<std::string> tool_names;  // the names that may be called; empty: any
    bool several_calls = true;
    std::function<std::string()> make_id;  // unset: make_call_id(format)
};

// Not thread-safe: one choice's text, in order.
class ToolCallParser {
public:
    explicit ToolCallParser(ParserOptions options);

    ParsedDelta push(std::string_view text);
    // The end of the text: whatever was held back, as content (or as the end of a call cut short).
    ParsedDelta finish();
    // The calls so far, arguments as far as they went.
    const std::vector<ToolCall>& calls() const { return calls_; }

private:
    //   kStart (Llama 3) --"{"---------------------------------> kCall
    //          |--<|python_tag|>--> kOpen       anything else --> kPlain (content to the end)
    //   kText --marker--> kOpen --"{" (Mistral: "[" first)--> kCall --"}"--> kAfterCall
    //   kAfterCall --closing tag / "]" / text--> kText (Llama 3: kPlain);  --"," / ";"--> kOpen (the next call)
    //   kOpen, or kCall before the name is read, on anything unexpected: give_up() (marker as content, the rest
    //   read again as text); kCall after it: break_off() (the call ends, the character is read again as text)
    enum class State { kStart, kText, kPlain, kOpen, kCall, kAfterCall };

    void step(char c);
    void start_char(char c);
    void text_char(char c);
    void open_char(char c);
    void call_char(char c);
    void after_call_char(char c);
    void after_hermes_call_char(char c);
    void enter_open();
    void begin_call();
    void commit(const std::string& name);
    void end_call();
    void give_up();
    void break_off(char c);
    void rescan(std::string text);
    void emit_content(std::string_view text);
    void emit_arguments(const std::string& fragment);
    State text_state() const;

    ParserOptions options_;
    std::string marker_;
    State state_;
    // Held text: whitespace that may come before a marker, then what may still become the marker (or, after a
    // Hermes call, its closing tag). Kept apart so that a long run of whitespace costs nothing per character.
    std::string space_;
    std::string prefix_;
    std::string held_;    // the current call's text while it may still turn out not to be one
    size_t marker_length_ = 0;  // how much of held_ is the marker (given back as content if it is not a call)
    std::optional<CallObject> object_;
    bool committed_ = false;   // the current call was announced
    bool dropped_ = false;     // the current call is parsed but not reported (several_calls off)
    bool in_list_ = false;     // Mistral: inside [ ... ]
    bool after_separator_ = false;  // kOpen was entered after a call's separator, not a marker
    bool skip_space_ = false;       // text right after a call: its leading whitespace is not content
    int num_calls_seen_ = 0;   // reported or dropped
    std::vector<ToolCall> calls_;
    std::string input_;  // what push() is reading; rescan() puts text back at its front
    size_t cursor_ = 0;
    ParsedDelta out_;
};

// The calls and content of a whole text.
struct ParsedOutput {
    std::string content;
    std::vector<ToolCall> calls;
};
ParsedOutput parse_tool_calls(std::string_view text, ParserOptions options);

}  // namespace tern::tools
