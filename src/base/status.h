// Status and Result<T>: how expected failures travel (bad files, bad input, missing resources).
// Invariant violations use TERN_CHECK (base/check.h) instead; no exception crosses a module boundary.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "base/check.h"

namespace tern {

enum class StatusCode { kOk, kInvalidArgument, kNotFound, kResourceExhausted, kUnavailable, kInternal, kUnimplemented };

class Status {
public:
    Status() = default;
    Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

    static Status ok() { return Status(); }
    bool is_ok() const { return code_ == StatusCode::kOk; }
    StatusCode code() const { return code_; }
    const std::string& message() const { return message_; }

private:
    StatusCode code_ = StatusCode::kOk;
    std::string message_;
};

inline Status invalid_argument(std::string message) { return {StatusCode::kInvalidArgument, std::move(message)}; }
inline Status not_found(std::string message) { return {StatusCode::kNotFound, std::move(message)}; }
inline Status unimplemented(std::string message) { return {StatusCode::kUnimplemented, std::move(message)}; }
inline Status internal_error(std::string message) { return {StatusCode::kInternal, std::move(message)}; }

// Holds either a value or a failed Status. Reading value() of a failed Result is a programming error.
template <typename T>
class Result {
public:
    Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
    Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
        TERN_CHECK(!status_.is_ok()) << "a Result made from a Status must carry an error";
    }

    bool is_ok() const { return value_.has_value(); }
    const Status& status() const { return status_; }
    T& value() & {
        TERN_CHECK(value_.has_value()) << "value() of a failed Result: " << status_.message();
        return *value_;
    }
    const T& value() const& {
        TERN_CHECK(value_.has_value()) << "value() of a failed Result: " << status_.message();
        return *value_;
    }
    T&& value() && {
        TERN_CHECK(value_.has_value()) << "value() of a failed Result: " << status_.message();
        return std::move(*value_);
    }

private:
    std::optional<T> value_;
    Status status_;
};

}  // namespace tern

// Returns early from a function returning Status or Result<T> when `expr` failed.
#define TERN_RETURN_IF_ERROR(expr)                   \
    do {                                             \
        ::tern::Status tern_status_ = (expr);        \
        if (!tern_status_.is_ok()) return tern_status_; \
    } while (0)

#define TERN_CONCAT_INNER(a, b) a##b
#define TERN_CONCAT(a, b) TERN_CONCAT_INNER(a, b)
// `TERN_ASSIGN_OR_RETURN(auto x, make_x());` binds the value or returns the error.
#define TERN_ASSIGN_OR_RETURN(lhs, expr) TERN_ASSIGN_OR_RETURN_IMPL(TERN_CONCAT(tern_result_, __LINE__), lhs, expr)
#define TERN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
    auto tmp = (expr);                             \
    if (!tmp.is_ok()) return tmp.status();         \
    lhs = std::move(tmp).value()
