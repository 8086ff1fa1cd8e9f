// `tern bench serve` and `tern bench compare` end to end: from a BenchConfig to the console report, the saved result,
// the ledger rows and the charts. Talks to the server only over HTTP (never links the engine).
#pragma once

#include <ostream>
#include <string>

#include "base/status.h"
#include "bench/compare.h"
#include "bench/config.h"

namespace tern::bench {

// Runs the benchmark (every sweep point), writes the Markdown report to `out` and progress to stderr. Fails when the
// configuration is invalid, the server cannot be reached to list its model, a file cannot be written, or every
// request failed (after the report has been printed).
Status run_bench_serve(BenchConfig config, std::ostream& out);

struct CompareCommand {
    std::string path_a;
    std::string path_b;
    CompareOptions options;
    bool fail_on_regression = false;  // make a "worse" verdict an error (for CI)
};

Status run_bench_compare(const CompareCommand& command, std::ostream& out);

}  // namespace tern::bench
