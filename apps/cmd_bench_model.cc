// tern bench model (being written; see issue 3).
#include "apps/commands.h"

namespace tern::apps {

void register_bench_model(CLI::App& bench) {
    CLI::App* command = bench.add_subcommand("model", "Prefill and decode speed of a model (in progress)");
    set_action(command, [] { return unimplemented("tern bench model is not built yet"); });
}

}  // namespace tern::apps
