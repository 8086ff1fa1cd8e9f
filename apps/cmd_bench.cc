// tern bench: `serve` load-tests an OpenAI-compatible server, `compare` diffs two results, `model` measures
// prefill/decode speed of a model in-process.
#include "apps/commands.h"

namespace tern::apps {

void register_bench(CLI::App& app) {
    CLI::App* bench = app.add_subcommand("bench", "Benchmarks: serve (load test a server), compare, model, engine, memory, compute");
    bench->require_subcommand(1);
    register_bench_serve(*bench);
    register_bench_model(*bench);
    register_bench_engine(*bench);
}

}  // namespace tern::apps
