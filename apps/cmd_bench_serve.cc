// tern bench serve / tern bench compare (being written; see issue 6).
#include "apps/commands.h"

namespace tern::apps {

void register_bench_serve(CLI::App& bench) {
    CLI::App* command = bench.add_subcommand("serve", "Load-test an OpenAI-compatible server (in progress)");
    set_action(command, [] { return unimplemented("tern bench serve is not built yet"); });
}

}  // namespace tern::apps
