// TERN_CHECK: always-on invariant checks for programmer errors (never for user input).
// On failure it prints file:line, the condition and the streamed message, then aborts.
#pragma once

#include <sstream>

namespace tern::detail {

class CheckFailure {
public:
    CheckFailure(const char* file, int line, const char* condition);
    [[noreturn]] ~CheckFailure();
    template <typename T>
    CheckFailure& operator<<(const T& value) {
        stream_ << value;
        return *this;
    }

private:
    std::ostringstream stream_;
};

// Lets `TERN_CHECK(x) << "msg"` compile as one expression of type void.
struct Voidify {
    void operator&(CheckFailure&) {}
};

}  // namespace tern::detail

#define TERN_CHECK(condition) \
    (condition) ? (void)0 : ::tern::detail::Voidify() & ::tern::detail::CheckFailure(__FILE__, __LINE__, #condition)
