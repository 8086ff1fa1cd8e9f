// bench_fixture_server: one loopback fixture server in its own process, for measuring `tern bench serve` by hand
// (docs/perf/bench.md). Listens on 127.0.0.1 only, prints its URL, and exits after --seconds.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "bench/fixture_server.h"

int main(int argc, char** argv) {
    tern::testing::FixtureOptions options;
    double seconds = 60;
    for (int idx = 1; idx + 1 < argc; idx += 2) {
        const std::string flag = argv[idx];
        const char* value = argv[idx + 1];
        if (flag == "--flavor") {
            options.flavor = std::strcmp(value, "llama.cpp") == 0 ? tern::testing::ServerFlavor::kLlamaCpp
                                                                  : tern::testing::ServerFlavor::kVllm;
        } else if (flag == "--ttft-ms") {
            options.ttft = std::chrono::microseconds(static_cast<int64_t>(std::atof(value) * 1000));
        } else if (flag == "--itl-us") {
            options.itl = std::chrono::microseconds(std::atoll(value));
        } else if (flag == "--seconds") {
            seconds = std::atof(value);
        } else {
            std::fprintf(stderr, "usage: %s [--flavor vllm|llama.cpp] [--ttft-ms MS] [--itl-us US] [--seconds S]\n",
                         argv[0]);
            return 2;
        }
    }
    tern::testing::FixtureServer server(options);
    std::printf("%s\n", server.base_url().c_str());
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return 0;
}
