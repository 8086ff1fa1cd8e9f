#include "base/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tern {
namespace {

LogLevel level_from_env() {
    const char* value = std::getenv("TERN_LOG_LEVEL");
    if (value == nullptr) return LogLevel::kInfo;
    if (std::strcmp(value, "debug") == 0) return LogLevel::kDebug;
    if (std::strcmp(value, "warn") == 0) return LogLevel::kWarn;
    if (std::strcmp(value, "error") == 0) return LogLevel::kError;
    return LogLevel::kInfo;
}

std::atomic<LogLevel>& level_storage() {
    static std::atomic<LogLevel> level{level_from_env()};
    return level;
}

}  // namespace

LogLevel log_level() { return level_storage().load(std::memory_order_relaxed); }
void set_log_level(LogLevel level) { level_storage().store(level, std::memory_order_relaxed); }

void log_line(LogLevel level, std::string_view text) {
    static const char* const kNames[] = {"debug", "info", "warn", "error"};
    std::fprintf(stderr, "tern %s: %.*s\n", kNames[static_cast<int>(level)], static_cast<int>(text.size()), text.data());
}

}  // namespace tern
