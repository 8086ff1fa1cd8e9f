// tern plan: capacity and cost from model + hardware + workload (being written; see issue 7).
#include "apps/commands.h"

namespace tern::apps {

void register_plan(CLI::App& app) {
    CLI::App* command = app.add_subcommand("plan", "Capacity and cost planner (in progress)");
    set_action(command, [] { return unimplemented("tern plan is not built yet"); });
}

}  // namespace tern::apps
