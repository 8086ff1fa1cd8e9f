// route_fixture: the fixture backend of fixture_backend.h as a process, for scripts/bench-route (replicas with a
// known token rate and concurrency, whose own CPU cost the benchmark reports). Prints "listening on http://HOST:PORT"
// and serves until SIGTERM or SIGINT.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "fixture_backend.h"

int main(int argc, char** argv) {
    tern::testing::FixtureOptions options;
    CLI::App app("A fake OpenAI-compatible backend that streams at a fixed rate");
    app.add_option("--chunks", options.chunks, "Tokens per answer when the request names no max_tokens");
    app.add_option("--chunks-per-second", options.chunks_per_second, "Per stream; 0 = as fast as possible");
    app.add_option("--max-concurrency", options.max_concurrency, "Answers at once beyond which 429; 0 = no limit");
    app.add_option("--logprob", options.logprob, "The logprob of every token");
    app.add_option("--token-text", options.token_text, "The text of every token (tells replicas apart)");
    app.add_option("--unsure-marker", options.unsure_marker, "Prompts containing this get --unsure-logprob");
    app.add_option("--unsure-logprob", options.unsure_logprob, "The logprob of every token of an unsure answer");
    CLI11_PARSE(app, argc, argv);
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    tern::testing::FixtureBackend backend(options);
    std::printf("listening on %s\n", backend.url().c_str());
    std::fflush(stdout);
    int signal = 0;
    sigwait(&signals, &signal);
    std::printf("requests %d, cancelled %d\n", backend.requests(), backend.cancelled());
    return 0;
}
