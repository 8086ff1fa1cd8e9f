#include "store/model_ref.h"

#include <cstdlib>

#include <fmt/format.h>

namespace tern::store {

Status check_store_word(std::string_view text, std::string_view what) {
    constexpr size_t kMaxLength = 128;
    const auto allowed = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == '-';
    };
    bool ok = !text.empty() && text.size() <= kMaxLength && text.front() != '.' && text.front() != '-';
    for (char c : text) ok = ok && allowed(c);
    // "current" and "history" are the store's own entries beside the versions.
    if (ok && what == "version" && (text == "current" || text == "history")) ok = false;
    if (ok) return Status::ok();
    return invalid_argument(fmt::format(
        "'{}' is not a valid model {}: use letters, digits, '.', '_' and '-' (at most {}, not starting with '.' or "
        "'-'{})",
        text, what, kMaxLength, what == "version" ? "; not 'current' or 'history'" : ""));
}

Result<ModelRef> parse_model_ref(std::string_view text) {
    const size_t at = text.find('@');
    ModelRef ref{std::string(text.substr(0, at)), at == std::string_view::npos ? "" : std::string(text.substr(at + 1))};
    TERN_RETURN_IF_ERROR(check_store_word(ref.name, "name"));
    if (at != std::string_view::npos) TERN_RETURN_IF_ERROR(check_store_word(ref.version, "version"));
    return ref;
}

std::string store_root(const std::string& flag) {
    if (!flag.empty()) return flag;
    const auto env = [](const char* name) {
        const char* value = std::getenv(name);
        return value != nullptr ? std::string(value) : std::string();
    };
    if (!env("TERN_HOME").empty()) return env("TERN_HOME");
    if (!env("XDG_DATA_HOME").empty()) return env("XDG_DATA_HOME") + "/tern";
    return (env("HOME").empty() ? std::string(".") : env("HOME")) + "/.local/share/tern";
}

}  // namespace tern::store
