// Each subcommand registers its flags and its action on the root CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "base/status.h"

namespace tern::apps {

// The `-t,--threads` option every compute command takes: 1 to 512 worker threads, the default shown in --help.
inline CLI::Option* add_threads_option(CLI::App* command, int* num_threads) {
    return command->add_option("-t,--threads", *num_threads, "Threads")->capture_default_str()->check(CLI::Range(1, 512));
}

void register_generate(CLI::App& app);
void register_tokenize(CLI::App& app);
void register_info(CLI::App& app);
void register_synth(CLI::App& app);
void register_plan(CLI::App& app);
void register_convert(CLI::App& app);
void register_quantize(CLI::App& app);       // apps/cmd_quantize.cc
void register_eval(CLI::App& app);           // apps/cmd_eval.cc: `eval perplexity`, `eval compare`
void register_serve(CLI::App& app);           // apps/cmd_serve.cc: the OpenAI-compatible server
void register_route(CLI::App& app);           // apps/cmd_route.cc: the gateway in front of replicas
void register_doctor(CLI::App& app);          // apps/cmd_doctor.cc: the machine checked for serving
void register_models(CLI::App& app);          // apps/cmd_models.cc: the model store
void register_bench(CLI::App& app);           // apps/cmd_bench.cc: the `bench` group
void register_bench_serve(CLI::App& bench);   // apps/cmd_bench_serve.cc: `bench serve`, `bench compare`
void register_bench_model(CLI::App& bench);   // apps/cmd_bench_model.cc: `bench model`
void register_bench_engine(CLI::App& bench);  // apps/cmd_bench_engine.cc: `bench engine`

// The `-m,--model` option of commands that load a GGUF: a path, or a store name resolved to its file at parse time
// (apps/cmd_models.cc). `typed`, when given, receives the argument as the user wrote it.
CLI::Option* add_model_option(CLI::App* command, std::string* path, const std::string& help,
                              std::string* typed = nullptr);
// The transform behind add_model_option, for options that take several models.
CLI::Validator model_resolver(std::string* typed = nullptr);
inline constexpr const char* kModelOptionNote = " (a path, or NAME[@VERSION] from `tern models`: an existing path wins)";

// Prints "tern: error: MESSAGE" as one line and turns a failed Status into exit code 1.
int report(const Status& status);

// Runs `action` as the subcommand's callback; its failure becomes one error line and a non-zero exit.
void set_action(CLI::App* command, std::function<Status()> action);

}  // namespace tern::apps
