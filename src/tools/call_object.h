// One tool call's JSON object, read a character at a time as a model writes it: {"name": "f", "arguments": {...}}
// (or "parameters", Llama 3's key), keys in any order. Its name is known as soon as its string ends, and the
// arguments come out as they arrive, with the whitespace between JSON tokens removed, so that a stream can send
// them before the object is complete. The object's shape and the nesting of brackets are checked; the arguments'
// own syntax otherwise is not (a model may write broken JSON, which OpenAI passes on too).
#pragma once

#include <optional>
#include <string>

namespace tern::tools {

// Not thread-safe: one stream's characters, in order.
class CallObject {
public:
    enum class Progress { kMore, kDone, kFailed };

    // Feeds the next character; the first must be '{'. After kDone or kFailed, further characters are kFailed.
    Progress push(char c);

    // The name, once its string has ended (a JSON string, decoded).
    const std::optional<std::string>& name() const { return name_; }
    // The arguments' text that arrived since the last call (whitespace outside strings removed).
    std::string take_arguments();
    // Whether the object had an arguments (or parameters) key.
    bool has_arguments() const { return seen_arguments_; }

private:
    enum class State { kStart, kBeforeKey, kKey, kColon, kBeforeValue, kValue, kAfterValue, kDone, kFailed };
    enum class Role { kName, kArguments, kOther };

    Progress fail();
    Progress key_char(char c);
    Progress start_value(char c);
    Progress value_char(char c);
    Progress after_value(char c);
    Progress end_value();
    void keep(char c);

    State state_ = State::kStart;
    Role role_ = Role::kOther;
    std::string key_;        // the raw key being read, quotes included
    std::string raw_value_;  // the raw name string being read, quotes included
    std::string brackets_;   // the open '{' and '[' of the value being read
    bool in_string_ = false;
    bool escaped_ = false;
    bool in_scalar_ = false;  // a number, true, false or null as the whole value
    std::optional<std::string> name_;
    bool seen_arguments_ = false;
    std::string arguments_;  // not yet taken
};

}  // namespace tern::tools
