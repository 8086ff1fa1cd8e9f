// Runs the tern binary as a user would and captures its exit status and output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tern::testing {

struct CommandResult {
    int exit_code = -1;      // -1 when the process died from a signal
    int signal = 0;
    std::string out;
    std::string err;
};

inline std::string temp_dir() {
    std::filesystem::create_directories(TERN_TEST_TMP);
    return TERN_TEST_TMP;
}

// Runs a shell command line, its stdout and stderr captured apart.
inline CommandResult run_command(const std::string& command_line) {
    static int counter = 0;
    const std::string err_path = temp_dir() + "/stderr_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    const std::string command = command_line + " 2>" + err_path;
    CommandResult result;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return result;
    std::array<char, 4096> buffer{};
    size_t count = 0;
    while ((count = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.out.append(buffer.data(), count);
    const int status = ::pclose(pipe);
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
    std::ifstream err_stream(err_path);
    std::stringstream err_text;
    err_text << err_stream.rdbuf();
    result.err = err_text.str();
    std::filesystem::remove(err_path);
    return result;
}

// `args` is appended to the tern binary's path as shell words; the caller quotes what needs quoting. `prefix` goes
// before the binary (a wrapper such as prlimit or env).
inline CommandResult run_tern_with_prefix(const std::string& prefix, const std::string& args) {
    return run_command(prefix + std::string(TERN_BINARY) + " " + args);
}

inline CommandResult run_tern(const std::string& args) { return run_tern_with_prefix("", args); }

}  // namespace tern::testing
