#include "bench/request_record.h"

#include <array>
#include <utility>

namespace tern::bench {
namespace {

constexpr std::array<std::pair<ErrorKind, std::string_view>, 11> kNames = {{
    {ErrorKind::kNone, "none"},
    {ErrorKind::kConnect, "connect"},
    {ErrorKind::kTimeout, "timeout"},
    {ErrorKind::kHttpStatus, "http_status"},
    {ErrorKind::kRead, "read"},
    {ErrorKind::kWrite, "write"},
    {ErrorKind::kStreamError, "stream_error"},
    {ErrorKind::kBadStream, "bad_stream"},
    {ErrorKind::kNoTokens, "no_tokens"},
    {ErrorKind::kCanceled, "canceled"},
    {ErrorKind::kOther, "other"},
}};

}  // namespace

std::string_view to_string(ErrorKind kind) {
    for (const auto& [value, name] : kNames) {
        if (value == kind) return name;
    }
    return "other";
}

ErrorKind error_kind_from_string(std::string_view name) {
    for (const auto& [value, known] : kNames) {
        if (known == name) return value;
    }
    return ErrorKind::kOther;
}

double RequestRecord::tpot_s() const {
    if (output_tokens < 2) return 0;
    return (e2el_s - ttft_s) / static_cast<double>(output_tokens - 1);
}

}  // namespace tern::bench
