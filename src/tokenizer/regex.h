// A compiled PCRE2 pattern in UTF + UCP mode (so \p{L}, \p{N} and \w follow Unicode), with `$` matching only at
// the very end as in ECMAScript. Matching is thread-safe: the compiled code is shared, match state is per call.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tern {

class Regex {
public:
    static Result<Regex> compile(std::string_view pattern);

    Regex(Regex&&) noexcept = default;
    Regex& operator=(Regex&&) noexcept = default;
    ~Regex();

    // Calls `on_match(begin, end)` with byte offsets into `subject` for each non-empty match, left to right,
    // without overlap. `subject` must be valid UTF-8. Returns false if matching failed part way (resource
    // limits); the matches reported until then stand.
    bool for_each_match(std::string_view subject, const std::function<void(size_t, size_t)>& on_match) const;

    const std::string& pattern() const { return pattern_; }

private:
    struct CodeDeleter {
        void operator()(void* code) const;
    };
    Regex() = default;

    std::string pattern_;
    std::unique_ptr<void, CodeDeleter> code_;
};

}  // namespace tern
