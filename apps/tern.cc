// tern: one binary, one thin file per subcommand (flags -> options struct -> library call).
#include <signal.h>

#include <cstdio>

#include "apps/commands.h"
#include "base/partial_files.h"

namespace tern::apps {

Status& action_status();

int report(const Status& status) {
    if (status.is_ok()) return 0;
    std::fprintf(stderr, "tern: error: %s\n", status.message().c_str());
    return 1;
}

// CLI11 callbacks return nothing, so the chosen subcommand's status is kept here for main().
Status& action_status() {
    static Status status;
    return status;
}

void set_action(CLI::App* command, std::function<Status()> action) {
    command->callback([action = std::move(action)] { action_status() = action(); });
}

}  // namespace tern::apps

int main(int argc, char** argv) {
    // SIGINT / SIGTERM during tern quantize, convert or synth remove the half-written file (tern serve takes these
    // signals with sigwait instead). Past a file-size limit (ulimit -f), a write fails with EFBIG and is reported,
    // as a full disk is, rather than SIGXFSZ ending the process with the partial file left behind.
    tern::remove_partial_files_on_signal();
    ::signal(SIGXFSZ, SIG_IGN);
    CLI::App app{"tern: LLM inference on the CPU"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "tern 0.1.0");
    tern::apps::register_generate(app);
    tern::apps::register_tokenize(app);
    tern::apps::register_info(app);
    tern::apps::register_synth(app);
    tern::apps::register_plan(app);
    tern::apps::register_convert(app);
    tern::apps::register_quantize(app);
    tern::apps::register_eval(app);
    tern::apps::register_serve(app);
    tern::apps::register_route(app);
    tern::apps::register_doctor(app);
    tern::apps::register_models(app);
    tern::apps::register_bench(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ValidationError& error) {
        // A value that failed its check (a -m that is neither a file nor a stored model): one line, like any error.
        std::fprintf(stderr, "tern: error: %s\n", error.what());
        return 1;
    } catch (const CLI::ParseError& error) {
        return app.exit(error);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "tern: error: %s\n", error.what());
        return 1;
    }
    return tern::apps::report(tern::apps::action_status());
}
