// Reading a TOML document into typed fields with errors that name the key path: a small layer over toml++ that the
// route configuration's parser uses. The first error is kept; the rest of the reading goes on harmlessly.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "base/status.h"

namespace tern::route {

class ConfigReader {
public:
    explicit ConfigReader(std::string source) : source_(std::move(source)) {}

    // "<source>: <path>: <message>"; only the first one is kept.
    void fail(std::string_view path, std::string_view message);
    bool failed() const { return !status_.is_ok(); }
    const Status& status() const { return status_; }

    // Fails on a key of `table` outside `allowed` (a misspelt key is never silently ignored).
    void allow_only(const toml::table& table, std::string_view path, std::initializer_list<std::string_view> allowed);

    // Each reads table[key] when present (leaving `out` as it was otherwise) and fails on a wrong type or range.
    void read(const toml::table& table, std::string_view path, std::string_view key, std::string& out);
    void read(const toml::table& table, std::string_view path, std::string_view key, bool& out);
    void read(const toml::table& table, std::string_view path, std::string_view key, int64_t& out, int64_t min,
              int64_t max);
    void read(const toml::table& table, std::string_view path, std::string_view key, int& out, int min, int max);
    void read(const toml::table& table, std::string_view path, std::string_view key, double& out, double min,
              double max);
    void read(const toml::table& table, std::string_view path, std::string_view key, std::vector<std::string>& out);

    static std::string join(std::string_view path, std::string_view key);
    static std::string index(std::string_view path, size_t idx);

private:
    std::string source_;
    Status status_;
};

// "a string", "an integer", ...: for error messages.
std::string_view describe(toml::node_type type);

}  // namespace tern::route
