// The tuning ledger (--ledger FILE.csv): one CSV row appended per run with its configuration and key figures, so
// every tuning step stays on record. The header is written when the file is new; a file with another header is left
// alone (an error says so) rather than mixed.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tern::bench {

using LedgerRow = std::vector<std::pair<std::string, std::string>>;  // column name -> value, in column order

// RFC 4180 quoting: fields with a comma, quote or newline are quoted, quotes doubled.
std::string csv_field(const std::string& value);

// Appends `rows` (all with the same columns) to `path`, writing the header first if the file is new or empty.
Status append_ledger_rows(const std::string& path, const std::vector<LedgerRow>& rows);

}  // namespace tern::bench
