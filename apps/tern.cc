// tern: one binary, one thin file per subcommand.
#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
    CLI::App app{"tern: LLM inference on the CPU"};
    app.require_subcommand(1);
    CLI11_PARSE(app, argc, argv);
    return 0;
}
