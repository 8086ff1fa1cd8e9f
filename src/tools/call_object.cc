#include "tools/call_object.h"

#include <nlohmann/json.hpp>

#include "tools/text_scan.h"

namespace tern::tools {
namespace {


// The characters of numbers, true, false and null.
bool is_scalar_char(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' || c == 'E';
}

// A complete JSON string token (quotes included), decoded; nullopt when it is not one.
std::optional<std::string> decode_string(const std::string& token) {
    const nlohmann::json value = nlohmann::json::parse(token, nullptr, /*allow_exceptions=*/false);
    if (!value.is_string()) return std::nullopt;
    return value.get<std::string>();
}

}  // namespace

std::string CallObject::take_arguments() {
    std::string taken;
    taken.swap(arguments_);
    return taken;
}

CallObject::Progress CallObject::fail() {
    state_ = State::kFailed;
    return Progress::kFailed;
}

// The value's text as it will be sent: only the arguments' is kept.
void CallObject::keep(char c) {
    if (role_ == Role::kArguments) arguments_ += c;
    if (role_ == Role::kName) raw_value_ += c;
}

CallObject::Progress CallObject::push(char c) {
    switch (state_) {
        case State::kStart:
            if (c != '{') return fail();
            state_ = State::kBeforeKey;
            return Progress::kMore;
        case State::kBeforeKey:
            if (is_space(c)) return Progress::kMore;
            if (c == '}') {
                state_ = State::kDone;
                return Progress::kDone;
            }
            if (c != '"') return fail();
            key_ = "\"";
            state_ = State::kKey;
            return Progress::kMore;
        case State::kKey: return key_char(c);
        case State::kColon:
            if (is_space(c)) return Progress::kMore;
            if (c != ':') return fail();
            state_ = State::kBeforeValue;
            return Progress::kMore;
        case State::kBeforeValue:
            if (is_space(c)) return Progress::kMore;
            return start_value(c);
        case State::kValue: return value_char(c);
        case State::kAfterValue: return after_value(c);
        case State::kDone:
        case State::kFailed: return fail();
    }
    return fail();
}

// Reads the key up to its closing quote, then decides what its value is for: a second name or arguments is refused
// (which one would a client run?).
CallObject::Progress CallObject::key_char(char c) {
    key_ += c;
    if (escaped_) {
        escaped_ = false;
        return Progress::kMore;
    }
    if (c == '\\') {
        escaped_ = true;
        return Progress::kMore;
    }
    if (c != '"') return Progress::kMore;
    const std::optional<std::string> key = decode_string(key_);
    if (!key) return fail();
    role_ = Role::kOther;
    if (*key == "name") {
        if (name_) return fail();
        role_ = Role::kName;
    } else if (*key == "arguments" || *key == "parameters") {
        if (seen_arguments_) return fail();
        seen_arguments_ = true;
        role_ = Role::kArguments;
    }
    state_ = State::kColon;
    return Progress::kMore;
}

CallObject::Progress CallObject::start_value(char c) {
    if (role_ == Role::kName && c != '"') return fail();  // a name is a string
    state_ = State::kValue;
    raw_value_.clear();
    brackets_.clear();
    in_scalar_ = false;
    if (c == '"') {
        in_string_ = true;
    } else if (c == '{' || c == '[') {
        brackets_ += c;
    } else if (is_scalar_char(c)) {
        in_scalar_ = true;
    } else {
        return fail();
    }
    keep(c);
    return Progress::kMore;
}

CallObject::Progress CallObject::value_char(char c) {
    if (in_string_) {
        keep(c);
        if (escaped_) {
            escaped_ = false;
        } else if (c == '\\') {
            escaped_ = true;
        } else if (c == '"') {
            in_string_ = false;
            if (brackets_.empty()) return end_value();
        }
        return Progress::kMore;
    }
    if (in_scalar_) {
        if (is_scalar_char(c)) {
            keep(c);
            return Progress::kMore;
        }
        // The character after a scalar belongs to the object: the value ends before it.
        if (end_value() == Progress::kFailed) return Progress::kFailed;
        return after_value(c);
    }
    if (is_space(c)) return Progress::kMore;  // outside strings: dropped, the arguments come compact
    if (c == '"') {
        in_string_ = true;
    } else if (c == '{' || c == '[') {
        brackets_ += c;
    } else if (c == '}' || c == ']') {
        if (brackets_.empty() || brackets_.back() != (c == '}' ? '{' : '[')) return fail();
        brackets_.pop_back();
        keep(c);
        return brackets_.empty() ? end_value() : Progress::kMore;
    } else if (!is_scalar_char(c) && c != ',' && c != ':') {
        return fail();
    }
    keep(c);
    return Progress::kMore;
}

CallObject::Progress CallObject::end_value() {
    in_scalar_ = false;
    state_ = State::kAfterValue;
    if (role_ != Role::kName) return Progress::kMore;
    name_ = decode_string(raw_value_);
    return name_ ? Progress::kMore : fail();
}

CallObject::Progress CallObject::after_value(char c) {
    if (is_space(c)) return Progress::kMore;
    if (c == ',') {
        state_ = State::kBeforeKey;
        return Progress::kMore;
    }
    if (c != '}') return fail();
    state_ = State::kDone;
    return Progress::kDone;
}

}  // namespace tern::tools
