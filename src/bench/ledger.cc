#include "bench/ledger.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

namespace tern::bench {
namespace {

std::string header_of(const LedgerRow& row) {
    std::string line;
    for (const auto& [column, value] : row) {
        if (!line.empty()) line += ',';
        line += csv_field(column);
    }
    return line;
}

std::string line_of(const LedgerRow& row) {
    std::string line;
    for (size_t idx = 0; idx < row.size(); ++idx) {
        if (idx > 0) line += ',';
        line += csv_field(row[idx].second);
    }
    return line;
}

}  // namespace

std::string csv_field(const std::string& value) {
    if (value.find_first_of(",\"\n\r") == std::string::npos) return value;
    std::string quoted = "\"";
    for (char ch : value) {
        if (ch == '"') quoted += '"';
        quoted += ch;
    }
    return quoted + "\"";
}

Status append_ledger_rows(const std::string& path, const std::vector<LedgerRow>& rows) {
    if (rows.empty()) return Status::ok();
    const std::string header = header_of(rows.front());
    std::error_code error;
    const bool fresh = !std::filesystem::exists(path, error) || std::filesystem::file_size(path, error) == 0;
    if (!fresh) {
        std::ifstream existing(path);
        std::string first_line;
        std::getline(existing, first_line);
        if (!first_line.empty() && first_line.back() == '\r') first_line.pop_back();
        if (first_line != header) {
            return invalid_argument(fmt::format("ledger '{}' has other columns than this version writes; start a new "
                                                "ledger file",
                                                path));
        }
    }
    std::ofstream file(path, std::ios::app);
    if (!file) return invalid_argument(fmt::format("cannot append to the ledger '{}'", path));
    if (fresh) file << header << "\n";
    for (const LedgerRow& row : rows) file << line_of(row) << "\n";
    if (!file) return invalid_argument(fmt::format("writing the ledger '{}' failed", path));
    return Status::ok();
}

}  // namespace tern::bench
