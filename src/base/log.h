// Minimal leveled logging to stderr. The level comes from TERN_LOG_LEVEL (debug|info|warn|error), default info.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace tern {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

LogLevel log_level();
void set_log_level(LogLevel level);
void log_line(LogLevel level, std::string_view text);

template <typename... Args>
void log_debug(fmt::format_string<Args...> format, Args&&... args) {
    if (log_level() <= LogLevel::kDebug) log_line(LogLevel::kDebug, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
    if (log_level() <= LogLevel::kInfo) log_line(LogLevel::kInfo, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args) {
    if (log_level() <= LogLevel::kWarn) log_line(LogLevel::kWarn, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_error(fmt::format_string<Args...> format, Args&&... args) {
    log_line(LogLevel::kError, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tern
